//! `/debug/api_priority_and_fairness/dump_priority_levels`, `dump_queues` and `dump_requests`:
//! comma-and-tab separated tables, aligned as Go's `tabwriter` (minimum width 8, padding 1)
//! aligns them (`apf_controller_debug.go`).

use std::fmt::Write as _;

use super::controller::FlowControl;

/// `s` with each column padded to its widest cell, cells ending in `,` (kube's `row`).
fn table(rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = Vec::new();
    for row in rows {
        // The last cell ends its line: it is not aligned.
        for (i, cell) in row.iter().enumerate().take(row.len().saturating_sub(1)) {
            let width = (cell.chars().count() + 1 + 1).max(8);
            match widths.get_mut(i) {
                Some(w) => *w = (*w).max(width),
                None => widths.push(width),
            }
        }
    }
    let mut out = String::new();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if i + 1 == row.len() {
                out.push_str(cell);
            } else {
                let _ = write!(out, "{:<width$}", format!("{cell},"), width = widths[i]);
            }
        }
        out.push('\n');
    }
    out
}

fn strings<const N: usize>(cells: [&str; N]) -> Vec<String> {
    cells.iter().map(|c| c.to_string()).collect()
}

/// kube's `SeatSeconds.String`: eight decimals and `ss`.
fn seat_seconds(ss: f64) -> String {
    format!("{ss:.8}ss")
}

impl FlowControl {
    /// One row per priority level.
    pub fn dump_priority_levels(&self) -> String {
        let mut rows = vec![strings([
            "PriorityLevelName",
            "ActiveQueues",
            "IsIdle",
            "IsQuiescing",
            "WaitingRequests",
            "ExecutingRequests",
        ])];
        for level in &self.state().levels {
            let set = level.set.lock();
            let active = set.queues().filter(|q| !q.waiting.is_empty()).count();
            let totals = set.totals();
            rows.push(vec![
                level.name.to_string(),
                active.to_string(),
                set.is_idle().to_string(),
                false.to_string(),
                totals.waiting.to_string(),
                totals.executing.to_string(),
            ]);
        }
        table(&rows)
    }

    /// One row per queue.
    pub fn dump_queues(&self) -> String {
        let mut rows = vec![strings([
            "PriorityLevelName",
            "Index",
            "PendingRequests",
            "ExecutingRequests",
            "SeatsInUse",
            "NextDispatchR",
            "InitialSeatsSum",
            "MaxSeatsSum",
            "TotalWorkSum",
        ])];
        for level in &self.state().levels {
            let set = level.set.lock();
            for (i, q) in set.queues().enumerate() {
                let work = q.waiting_seats as f64
                    * super::queueset::ESTIMATED_SERVICE_DURATION.as_secs_f64();
                rows.push(vec![
                    level.name.to_string(),
                    i.to_string(),
                    q.waiting.len().to_string(),
                    q.executing.to_string(),
                    q.seats_in_use.to_string(),
                    seat_seconds(q.next_dispatch_r),
                    q.waiting_seats.to_string(),
                    q.waiting_seats.to_string(),
                    seat_seconds(work),
                ]);
            }
        }
        table(&rows)
    }

    /// One row per queued request; with `details`, who sent it and what it asks for.
    pub fn dump_requests(&self, details: bool) -> String {
        let mut header = strings([
            "PriorityLevelName",
            "FlowSchemaName",
            "QueueIndex",
            "RequestIndexInQueue",
            "FlowDistingsher",
            "ArriveTime",
            "InitialSeats",
            "FinalSeats",
            "AdditionalLatency",
        ]);
        if details {
            header.extend(strings([
                "UserName",
                "Verb",
                "APIPath",
                "Namespace",
                "Name",
                "APIVersion",
                "Resource",
                "SubResource",
            ]));
        }
        let mut rows = vec![header];
        for level in &self.state().levels {
            let set = level.set.lock();
            for (iq, q) in set.queues().enumerate() {
                for (ir, (waiter, _, seats)) in q.waiting.iter().enumerate() {
                    let r = &waiter.request;
                    let mut row = vec![
                        level.name.to_string(),
                        r.flow_schema.to_string(),
                        iq.to_string(),
                        ir.to_string(),
                        r.distinguisher.clone(),
                        r.arrived.to_string(),
                        seats.to_string(),
                        "0".to_string(),
                        "0s".to_string(),
                    ];
                    if details {
                        let a = &r.attributes;
                        let api_version = if a.api_group.is_empty() {
                            a.api_version.clone()
                        } else {
                            format!("{}/{}", a.api_group, a.api_version)
                        };
                        row.extend([
                            a.user.name.clone(),
                            a.verb.clone(),
                            a.path.clone(),
                            a.namespace.clone(),
                            a.name.clone(),
                            api_version,
                            a.resource.clone(),
                            a.subresource.clone(),
                        ]);
                    }
                    rows.push(row);
                }
            }
        }
        table(&rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_aligned_as_gos_tabwriter() {
        let rows = vec![
            strings(["PriorityLevelName", "ActiveQueues", "IsIdle"]),
            strings(["exempt", "0", "true"]),
        ];
        assert_eq!(
            table(&rows),
            "PriorityLevelName, ActiveQueues, IsIdle\n\
             exempt,            0,            true\n"
        );
        assert_eq!(seat_seconds(0.003), "0.00300000ss");
    }
}
