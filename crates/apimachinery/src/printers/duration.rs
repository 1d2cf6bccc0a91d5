//! Human-readable durations for the Age columns: a port of `k8s.io/apimachinery/pkg/util/duration`.

/// `HumanDuration`: a succinct duration with about two significant figures ("5s", "3m10s",
/// "2d1h", "2y1d"); `nanos` may be slightly negative to tolerate clock skew.
pub fn human_duration(nanos: i128) -> String {
    const SECOND: i128 = 1_000_000_000;
    const MINUTE: i128 = 60 * SECOND;
    const HOUR: i128 = 60 * MINUTE;
    // Go's int(d.Seconds()) truncates toward zero.
    let seconds = nanos / SECOND;
    if seconds < -1 {
        return "<invalid>".to_string();
    } else if seconds < 0 {
        return "0s".to_string();
    } else if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = nanos / MINUTE;
    if minutes < 10 {
        let s = (nanos / SECOND) % 60;
        if s == 0 {
            return format!("{minutes}m");
        }
        return format!("{minutes}m{s}s");
    } else if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = nanos / HOUR;
    if hours < 8 {
        let m = (nanos / MINUTE) % 60;
        if m == 0 {
            return format!("{hours}h");
        }
        format!("{hours}h{m}m")
    } else if hours < 48 {
        format!("{hours}h")
    } else if hours < 24 * 8 {
        let h = hours % 24;
        if h == 0 {
            return format!("{}d", hours / 24);
        }
        format!("{}d{h}h", hours / 24)
    } else if hours < 24 * 365 * 2 {
        format!("{}d", hours / 24)
    } else if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        if dy == 0 {
            return format!("{}y", hours / 24 / 365);
        }
        format!("{}y{dy}d", hours / 24 / 365)
    } else {
        format!("{}y", hours / 24 / 365)
    }
}

/// `ShortHumanDuration`: one unit only ("5s", "3m", "2d", "1y").
pub fn short_human_duration(nanos: i128) -> String {
    const SECOND: i128 = 1_000_000_000;
    let seconds = nanos / SECOND;
    if seconds < -1 {
        "<invalid>".to_string()
    } else if seconds < 0 {
        "0s".to_string()
    } else if seconds < 60 {
        format!("{seconds}s")
    } else if seconds / 60 < 60 {
        format!("{}m", seconds / 60)
    } else if seconds / 3600 < 24 {
        format!("{}h", seconds / 3600)
    } else if seconds / 3600 < 24 * 365 {
        format!("{}d", seconds / 3600 / 24)
    } else {
        format!("{}y", seconds / 3600 / 24 / 365)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i128 = 1_000_000;
    const S: i128 = 1_000 * MS;
    const M: i128 = 60 * S;
    const H: i128 = 60 * M;
    const D: i128 = 24 * H;
    const Y: i128 = 365 * D;

    #[test]
    fn human_duration_matches_kube() {
        // duration_test.go TestHumanDuration and TestHumanDurationBoundaries.
        let cases = [
            (S, "1s"),
            (70 * S, "70s"),
            (190 * S, "3m10s"),
            (70 * M, "70m"),
            (47 * H, "47h"),
            (49 * H, "2d1h"),
            ((8 * 24 + 2) * H, "8d"),
            (367 * D, "367d"),
            (2 * Y + 25 * H, "2y1d"),
            (8 * Y + 2 * H, "8y"),
            (-2 * S, "<invalid>"),
            (-2 * S + 1, "0s"),
            (0, "0s"),
            (S - MS, "0s"),
            (2 * M - MS, "119s"),
            (2 * M, "2m"),
            (2 * M + S, "2m1s"),
            (10 * M - MS, "9m59s"),
            (10 * M, "10m"),
            (10 * M + S, "10m"),
            (3 * H - MS, "179m"),
            (3 * H, "3h"),
            (3 * H + M, "3h1m"),
            (8 * H - MS, "7h59m"),
            (8 * H, "8h"),
            (8 * H + 59 * M, "8h"),
            (2 * D - MS, "47h"),
            (2 * D, "2d"),
            (2 * D + H, "2d1h"),
            (8 * D - MS, "7d23h"),
            (8 * D, "8d"),
            (8 * D + 23 * H, "8d"),
            (2 * Y - MS, "729d"),
            (2 * Y, "2y"),
            (2 * Y + 23 * H, "2y"),
            (2 * Y + 24 * H - MS, "2y"),
            (2 * Y + 24 * H, "2y1d"),
            (3 * Y, "3y"),
            (7 * Y, "7y"),
            (8 * Y - MS, "7y364d"),
            (8 * Y, "8y"),
            (8 * Y + 364 * D, "8y"),
            (9 * Y, "9y"),
        ];
        for (d, want) in cases {
            assert_eq!(human_duration(d), want, "HumanDuration({d}ns)");
        }
    }

    #[test]
    fn short_human_duration_matches_kube() {
        let cases = [
            (-2 * S, "<invalid>"),
            (-2 * S + 1, "0s"),
            (0, "0s"),
            (S - MS, "0s"),
            (S, "1s"),
            (M - MS, "59s"),
            (M, "1m"),
            (H - MS, "59m"),
            (H, "1h"),
            (D - MS, "23h"),
            (D, "1d"),
            (Y - MS, "364d"),
            (Y, "1y"),
            (2 * Y - MS, "1y"),
            (2 * Y, "2y"),
        ];
        for (d, want) in cases {
            assert_eq!(short_human_duration(d), want, "ShortHumanDuration({d}ns)");
        }
    }
}
