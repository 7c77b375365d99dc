//! rein-scheduler: when a task is due. It owns the schedules a task can have (a cron pattern
//! read in an IANA time zone, or a heartbeat interval), their validation with errors that name
//! what is wrong, the daylight-saving rule, and the clock the dispatcher reads, injectable so
//! tests drive time without sleeping.

pub mod clock;
pub mod schedule;

pub use clock::{Clock, ManualClock, SystemClock};
pub use schedule::{Schedule, ScheduleError, parse_interval};
