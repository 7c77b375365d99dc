//! The calculator's numbers: exact fractions of 128-bit integers while the arithmetic allows it
//! (`0.1 + 0.2` is exactly `0.3`, `1/3 * 3` is exactly `1`), binary floating point once an
//! irrational function, a constant or an overflow makes exactness impossible.

use std::cmp::Ordering;
use std::fmt;

/// A value: exact when it can be, approximate otherwise.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Number {
    /// `num / den`, reduced, `den > 0`.
    Exact {
        /// Numerator.
        num: i128,
        /// Denominator, positive.
        den: i128,
    },
    /// A floating-point approximation.
    Approx(f64),
}

/// Integer exponents up to this size are computed exactly (when the result fits).
const MAX_EXACT_EXPONENT: i128 = 512;
/// A terminating decimal with more fraction digits than this is shown rounded instead.
const MAX_EXACT_FRACTION_DIGITS: u32 = 30;

fn gcd(mut a: i128, mut b: i128) -> i128 {
    a = a.abs();
    b = b.abs();
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl Number {
    /// An integer.
    pub fn int(n: i128) -> Self {
        Number::Exact { num: n, den: 1 }
    }

    /// `num / den` reduced; `None` when `den` is zero or the sign flip overflows.
    fn ratio(num: i128, den: i128) -> Option<Self> {
        if den == 0 {
            return None;
        }
        let g = gcd(num, den).max(1);
        let (mut num, mut den) = (num / g, den / g);
        if den < 0 {
            num = num.checked_neg()?;
            den = den.checked_neg()?;
        }
        Some(Number::Exact { num, den })
    }

    /// A decimal literal (`12`, `0.25`, `.5`); `None` when it is not one.
    pub fn parse_decimal(text: &str) -> Option<Self> {
        let (int, frac) = text.split_once('.').unwrap_or((text, ""));
        if (int.is_empty() && frac.is_empty())
            || frac.contains('.')
            || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
        {
            return None;
        }
        let exact = (|| {
            let digits = format!("{int}{frac}");
            let num: i128 = digits.parse().ok()?;
            let den = 10i128.checked_pow(u32::try_from(frac.len()).ok()?)?;
            Number::ratio(num, den)
        })();
        exact.or_else(|| text.parse().ok().map(Number::Approx))
    }

    /// The value as a float.
    pub fn to_f64(self) -> f64 {
        match self {
            // Precision loss is the point of the conversion.
            Number::Exact { num, den } => num as f64 / den as f64,
            Number::Approx(v) => v,
        }
    }

    /// Whether the value is zero.
    pub fn is_zero(self) -> bool {
        match self {
            Number::Exact { num, .. } => num == 0,
            Number::Approx(v) => v == 0.0,
        }
    }

    /// The integer value, when the number is an exact integer.
    pub fn as_int(self) -> Option<i128> {
        match self {
            Number::Exact { num, den: 1 } => Some(num),
            _ => None,
        }
    }

    fn exact_or(
        self,
        other: Self,
        exact: impl Fn(i128, i128, i128, i128) -> Option<Self>,
        approx: impl Fn(f64, f64) -> f64,
    ) -> Self {
        if let (Number::Exact { num: a, den: b }, Number::Exact { num: c, den: d }) = (self, other)
            && let Some(v) = exact(a, b, c, d)
        {
            return v;
        }
        Number::Approx(approx(self.to_f64(), other.to_f64()))
    }

    /// `self + other`.
    fn plus(self, other: Self) -> Self {
        self.exact_or(
            other,
            |a, b, c, d| {
                Number::ratio(
                    a.checked_mul(d)?.checked_add(c.checked_mul(b)?)?,
                    b.checked_mul(d)?,
                )
            },
            |x, y| x + y,
        )
    }

    /// `self - other`.
    fn minus(self, other: Self) -> Self {
        self.plus(other.negate())
    }

    /// `self * other`.
    fn times(self, other: Self) -> Self {
        self.exact_or(
            other,
            |a, b, c, d| {
                // Cross-reduce first so products stay small.
                let (g1, g2) = (gcd(a, d).max(1), gcd(c, b).max(1));
                Number::ratio((a / g1).checked_mul(c / g2)?, (b / g2).checked_mul(d / g1)?)
            },
            |x, y| x * y,
        )
    }

    /// `self / other`; the caller rejects a zero divisor.
    fn over(self, other: Self) -> Self {
        self.exact_or(
            other,
            |a, b, c, d| Number::ratio(a, b)?.times(Number::ratio(d, c)?).exact(),
            |x, y| x / y,
        )
    }

    /// `self % other`, with the sign of `self` (as in most languages); the caller rejects zero.
    fn modulo(self, other: Self) -> Self {
        self.exact_or(
            other,
            |a, b, c, d| {
                Number::ratio(
                    a.checked_mul(d)?.checked_rem(c.checked_mul(b)?)?,
                    b.checked_mul(d)?,
                )
            },
            |x, y| x % y,
        )
    }

    /// `-self`.
    fn negate(self) -> Self {
        match self {
            Number::Exact { num, den } => match num.checked_neg() {
                Some(num) => Number::Exact { num, den },
                None => Number::Approx(-self.to_f64()),
            },
            Number::Approx(v) => Number::Approx(-v),
        }
    }

    /// `self ^ exp`: exact for an exact base and a moderate integer exponent.
    pub fn pow(self, exp: Self) -> Self {
        let exact = || {
            let e = exp.as_int().filter(|e| e.abs() <= MAX_EXACT_EXPONENT)?;
            let Number::Exact { num, den } = self else {
                return None;
            };
            let k = u32::try_from(e.unsigned_abs()).ok()?;
            let (n, d) = (num.checked_pow(k)?, den.checked_pow(k)?);
            if e >= 0 {
                Number::ratio(n, d)
            } else {
                Number::ratio(d, n)
            }
        };
        exact().unwrap_or_else(|| Number::Approx(self.to_f64().powf(exp.to_f64())))
    }

    fn exact(self) -> Option<Self> {
        matches!(self, Number::Exact { .. }).then_some(self)
    }

    /// Round half away from zero, to an integer.
    pub fn round(self) -> Self {
        self.integer_part(
            |n, d| {
                let twice = n.checked_mul(2)?;
                let q = twice.checked_add(if n >= 0 { d } else { -d })? / d.checked_mul(2)?;
                Some(q)
            },
            f64::round,
        )
    }

    /// Largest integer not above.
    pub fn floor(self) -> Self {
        self.integer_part(|n, d| Some(n.div_euclid(d)), f64::floor)
    }

    /// Smallest integer not below.
    pub fn ceil(self) -> Self {
        self.integer_part(|n, d| Some(-(n.checked_neg()?.div_euclid(d))), f64::ceil)
    }

    fn integer_part(
        self,
        exact: impl Fn(i128, i128) -> Option<i128>,
        approx: fn(f64) -> f64,
    ) -> Self {
        match self {
            Number::Exact { num, den } => match exact(num, den) {
                Some(v) => Number::int(v),
                None => Number::Approx(approx(self.to_f64())),
            },
            Number::Approx(v) => Number::Approx(approx(v)),
        }
    }

    /// `|self|`.
    pub fn abs(self) -> Self {
        if self.cmp_value(Number::int(0)) == Ordering::Less {
            self.negate()
        } else {
            self
        }
    }

    /// Numeric order (exact when both are exact).
    pub fn cmp_value(self, other: Self) -> Ordering {
        if let (Number::Exact { num: a, den: b }, Number::Exact { num: c, den: d }) = (self, other)
            && let (Some(l), Some(r)) = (a.checked_mul(d), c.checked_mul(b))
        {
            return l.cmp(&r);
        }
        self.to_f64().total_cmp(&other.to_f64())
    }

    /// Whether the value is a finite number.
    pub fn is_finite(self) -> bool {
        match self {
            Number::Exact { .. } => true,
            Number::Approx(v) => v.is_finite(),
        }
    }
}

/// Rounded to 12 significant digits, integers without a decimal point, scientific notation
/// outside 1e-6..1e15: floating-point noise
/// (`0.30000000000000004`) never reaches the model.
fn rounded(v: f64) -> String {
    let r: f64 = format!("{v:.11e}").parse().unwrap_or(v);
    if r != 0.0 && !(1e-6..1e15).contains(&r.abs()) {
        // Approximate and very large or small: scientific notation does not pretend to digits
        // that were never computed.
        format!("{r:e}")
    } else if r.fract() == 0.0 {
        // Checked above: an integer well inside i64.
        format!("{}", r as i64)
    } else {
        format!("{r}")
    }
}

/// The exact decimal expansion when `den` has no prime factor but 2 and 5 and the expansion is
/// short enough to read.
fn terminating(num: i128, den: i128) -> Option<String> {
    let (mut twos, mut fives, mut rest) = (0u32, 0u32, den);
    while rest % 2 == 0 {
        rest /= 2;
        twos += 1;
    }
    while rest % 5 == 0 {
        rest /= 5;
        fives += 1;
    }
    let digits = twos.max(fives);
    if rest != 1 || digits > MAX_EXACT_FRACTION_DIGITS {
        return None;
    }
    let scale = 10i128.checked_pow(digits)?;
    let scaled = num.checked_mul(scale / den)?.unsigned_abs();
    let scale = scale.unsigned_abs();
    let (int, frac) = (scaled / scale, scaled % scale);
    let sign = if num < 0 { "-" } else { "" };
    if digits == 0 {
        return Some(format!("{sign}{int}"));
    }
    let frac = format!("{frac:0width$}", width = digits as usize);
    Some(format!("{sign}{int}.{}", frac.trim_end_matches('0')))
}

impl fmt::Display for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Number::Exact { num, den } => match terminating(num, den) {
                Some(s) => f.write_str(&s),
                // A repeating decimal: the rounded value, and the exact fraction beside it.
                None => write!(f, "{} (exactly {num}/{den})", rounded(self.to_f64())),
            },
            Number::Approx(v) => f.write_str(&rounded(v)),
        }
    }
}

macro_rules! operator {
    ($trait:ident, $method:ident, $via:ident) => {
        impl std::ops::$trait for Number {
            type Output = Number;
            fn $method(self, other: Number) -> Number {
                self.$via(other)
            }
        }
    };
}

operator!(Add, add, plus);
operator!(Sub, sub, minus);
operator!(Mul, mul, times);
// Division and remainder by zero are rejected by the caller, which can name the expression.
operator!(Div, div, over);
operator!(Rem, rem, modulo);

impl std::ops::Neg for Number {
    type Output = Number;
    fn neg(self) -> Number {
        self.negate()
    }
}
