//! rein-scheduler: tasks and when they run. It owns the Task (instruction, agent, status,
//! automation, policies, counters), the schedules a task can have (a cron pattern read in an
//! IANA time zone, or a heartbeat interval) with their validation and daylight-saving rule, the
//! dispatcher that turns due fires into durable deliveries and rechecks the task before each
//! run, what people send to create or change a task and its validation ([`TaskInput`]), the
//! briefs its runs give and what resolving one does ([`briefing`]), what each run hands to
//! the next ([`handoff`]), what the system model reads from a run that ended ([`reading`]),
//! dependencies between tasks ([`deps`]), and the clock it reads,
//! injectable so tests drive time without sleeping.

pub mod brief;
pub mod briefing;
pub mod clock;
pub mod deps;
pub mod dispatcher;
pub mod handoff;
pub mod input;
pub mod reading;
pub mod schedule;
pub mod service;
pub mod task;

pub use clock::{Clock, ManualClock, SystemClock};
pub use dispatcher::{Dispatcher, LaunchError, Launcher, PendingCall, RunError, RunState, Tick};
pub use input::TaskInput;
pub use schedule::{Schedule, ScheduleError, parse_interval};
pub use service::{NewTask, TaskService};
pub use task::{
    Automation, CatchUp, Feedback, Overlap, Questions, ReviewState, Task, TaskError, TaskStatus,
};
