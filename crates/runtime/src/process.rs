//! Resource use of a process as Linux reports it in `/proc`: CPU seconds, RSS and peak RSS, of
//! this process (`/proc/self`) or of another one by its pid (a child, as `rkcm bench` reads).

/// CPU seconds (user + system) used by this process so far, from `/proc/self/stat`; 0 where it
/// cannot be read.
pub fn cpu_seconds() -> f64 {
    cpu_seconds_at("/proc/self/stat")
}

/// CPU seconds (user + system) used so far by the process `pid`; 0 where it cannot be read.
pub fn cpu_seconds_of(pid: u32) -> f64 {
    cpu_seconds_at(&format!("/proc/{pid}/stat"))
}

fn cpu_seconds_at(path: &str) -> f64 {
    let stat = std::fs::read_to_string(path).unwrap_or_default();
    // Fields after the parenthesised command name; utime and stime are the 14th and 15th of the
    // line, 0-based 11 and 12 after the name.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // Clock ticks are 100 per second on Linux.
    (ticks(11) + ticks(12)) / 100.0
}

/// Peak resident set size of this process in KiB (`VmHWM` in `/proc/self/status`); 0 where it
/// cannot be read.
pub fn peak_rss_kib() -> u64 {
    status_kib("/proc/self/status", "VmHWM:")
}

/// Resident set size of the process `pid` in KiB (`VmRSS`); 0 where it cannot be read.
pub fn rss_kib_of(pid: u32) -> u64 {
    status_kib(&format!("/proc/{pid}/status"), "VmRSS:")
}

/// Peak resident set size of the process `pid` in KiB (`VmHWM`); 0 where it cannot be read.
pub fn peak_rss_kib_of(pid: u32) -> u64 {
    status_kib(&format!("/proc/{pid}/status"), "VmHWM:")
}

fn status_kib(path: &str, field: &str) -> u64 {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_never_goes_backwards() {
        let before = cpu_seconds();
        let mut x = 0u64;
        for i in 0..1_000_000u64 {
            x = x.wrapping_add(i * i);
        }
        std::hint::black_box(x);
        assert!(cpu_seconds() >= before);
        if cfg!(target_os = "linux") {
            assert!(peak_rss_kib() > 0, "a running process has a peak RSS");
            let me = std::process::id();
            assert!(rss_kib_of(me) > 0 && rss_kib_of(me) <= peak_rss_kib_of(me));
            assert!(cpu_seconds_of(me) >= before);
            assert_eq!(rss_kib_of(u32::MAX), 0, "no such process reads as 0");
        }
    }
}
