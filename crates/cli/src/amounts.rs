//! Amounts on the command line: US dollars, parsed where they enter (`--daily-cost-cap`,
//! `rein user caps --daily-cost`).

use rein_core::usage::Usd;

/// Not an amount in USD.
#[derive(Debug, thiserror::Error)]
#[error("`{0}` is not an amount in USD (a number, 0 or more)")]
pub struct NotUsd(String);

/// A USD amount: a finite number, not negative.
pub fn usd(arg: &str) -> Result<Usd, NotUsd> {
    match arg.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(Usd::from_dollars(v)),
        _ => Err(NotUsd(arg.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn amounts_are_finite_and_not_negative() {
        assert_eq!(super::usd("1.25").unwrap().dollars(), 1.25);
        for bad in ["-1", "NaN", "inf", "one", ""] {
            let e = super::usd(bad).unwrap_err();
            assert!(e.to_string().contains("not an amount in USD"), "{e}");
        }
    }
}
