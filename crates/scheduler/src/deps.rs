//! Dependencies between tasks: a task may wait for others (`depends_on`). It runs only once
//! each of them has completed (status `completed`, no run still open): until then its fires are
//! skipped (`blocked: …`) and a manual run is refused. When the last of them completes, the
//! dispatcher starts it once (trigger `dependency`). Dependencies are a user's own tasks and
//! may not form a cycle; one that would is refused, naming it.

use crate::task::{Task, TaskError, TaskStatus};
use rein_store::Tasks;
use std::collections::HashMap;

/// Why `task` cannot run yet: the first dependency that has not completed, if any.
pub async fn blocker(store: &dyn Tasks, task: &Task) -> Result<Option<String>, TaskError> {
    for dep in &task.depends_on {
        let Some(row) = store.get_task(dep).await? else {
            return Ok(Some(format!(
                "blocked: waits for task {dep}, which was deleted"
            )));
        };
        let d = Task::from_row(row)?;
        if d.status != TaskStatus::Completed {
            let status = d.status.to_string();
            return Ok(Some(format!(
                "blocked: waits for task {} ({}), which is {status}",
                d.id, d.title
            )));
        }
        if store
            .runs(&d.id, 50)
            .await?
            .iter()
            .any(|r| r.finished_at.is_none())
        {
            return Ok(Some(format!(
                "blocked: waits for the last run of task {} ({})",
                d.id, d.title
            )));
        }
    }
    Ok(None)
}

/// Check `task`'s dependencies among `owner`'s `tasks` (every task of theirs, `task` as it
/// would be): each exists, is theirs and is not the task itself, and following them never
/// comes back to it.
pub fn check(task: &Task, tasks: &[Task]) -> Result<(), TaskError> {
    let by_id: HashMap<&str, &Task> = tasks
        .iter()
        .filter(|t| t.owner == task.owner && t.id != task.id)
        .map(|t| (t.id.as_str(), t))
        .chain(std::iter::once((task.id.as_str(), task)))
        .collect();
    for dep in &task.depends_on {
        if dep == &task.id {
            return Err(TaskError::invalid(format!(
                "depends_on: task {} cannot wait for itself",
                task.id
            )));
        }
        if !by_id.contains_key(dep.as_str()) {
            return Err(TaskError::invalid(format!(
                "depends_on: no task {dep} of yours"
            )));
        }
    }
    // A path from the task back to itself, depth first.
    fn back<'a>(
        at: &'a str,
        target: &str,
        by_id: &HashMap<&str, &'a Task>,
        path: &mut Vec<&'a str>,
    ) -> bool {
        let Some(t) = by_id.get(at) else {
            return false;
        };
        for dep in &t.depends_on {
            if dep == target {
                path.push(dep);
                return true;
            }
            if path.contains(&dep.as_str()) {
                continue;
            }
            path.push(dep);
            if back(dep, target, by_id, path) {
                return true;
            }
            path.pop();
        }
        false
    }
    let mut path = vec![task.id.as_str()];
    if back(&task.id, &task.id, &by_id, &mut path) {
        let named: Vec<String> = path
            .iter()
            .map(|id| match by_id.get(id) {
                Some(t) => format!("{id} ({})", t.title),
                None => (*id).to_owned(),
            })
            .collect();
        return Err(TaskError::invalid(format!(
            "depends_on would make a cycle: {}",
            named.join(" → ")
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str, deps: &[&str]) -> Task {
        let mut t: Task = serde_json::from_value(
            serde_json::json!({"title": id.to_uppercase(), "instruction": "x"}),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        t.id = id.into();
        t.owner = "u".into();
        t.depends_on = deps.iter().map(|d| (*d).to_owned()).collect();
        t
    }

    #[test]
    fn cycles_are_refused_naming_them_and_chains_are_fine() {
        let all = [task("a", &[]), task("b", &["a"]), task("c", &["b"])];
        assert!(check(&task("d", &["c", "a"]), &all).is_ok());
        let err = check(&task("a", &["c"]), &all).unwrap_err().to_string();
        assert_eq!(
            err,
            "depends_on would make a cycle: a (A) → c (C) → b (B) → a (A)"
        );
        assert!(
            check(&task("a", &["a"]), &all)
                .unwrap_err()
                .to_string()
                .contains("itself")
        );
        assert!(
            check(&task("e", &["zz"]), &all)
                .unwrap_err()
                .to_string()
                .contains("no task zz")
        );
        let mut foreign = task("f", &[]);
        foreign.owner = "v".into();
        assert!(check(&task("g", &["f"]), &[foreign]).is_err(), "not theirs");
    }
}
