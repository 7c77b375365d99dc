//! Goals: an objective worked towards over many operations, as a durable graph of works that
//! is planned, run, verified, recovered and accepted. This module is the pure half: the graph
//! ([`Goal`], [`Work`], [`Attempt`], [`Verdict`]), a plan and its checks ([`plan`]), and the
//! coordinator ([`coordinator`]): from the graph as committed it says what to do next
//! ([`GoalInstruction`], plain data like every other brain's instructions), and it folds what
//! was done back in ([`GoalEvent`]). Whoever runs a goal (the server, `rein worker`) executes
//! the instructions (a planner call, a work's operation, a verification) and commits each
//! event with the graph it makes, so a goal survives any crash and nothing is done twice: a
//! work's operation has an id derived from the goal, the work and the attempt
//! ([`work_operation_id`]).
//!
//! The rule the whole module keeps: a goal is `achieved` only on a passing verdict of its final
//! acceptance, or a person's explicit acceptance, never on a worker's own claim; a work passes
//! only on an independent verdict.

pub mod coordinator;
mod graph;
pub mod plan;
pub mod prompts;

pub use coordinator::{GoalDecision, GoalError, GoalEvent, GoalInstruction, decide};
pub use graph::{
    Attempt, AttemptEnd, Goal, GoalLimits, GoalSettings, GoalStatus, OnBudget, PlanRevision,
    Verdict, Work, WorkStatus, verification_operation_id, work_operation_id,
};
