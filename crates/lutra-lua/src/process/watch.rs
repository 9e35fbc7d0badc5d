//! Monitors and links: who learns of a process's end (`lutra.monitor`), and who
//! stops with it (`lutra.spawn_link`), as Erlang's monitors and links do.
//!
//! # Invariants
//! - A monitor is an entry in the watched process's `monitors`, one per
//!   `lutra.monitor` call; it is taken (and so told once) when the process finishes,
//!   or told at once when it had finished already. Telling is queueing the message
//!   `{"down", p, status, value_or_error...}` in the monitor's mailbox, past its
//!   capacity if need be (a notice is never lost, and never blocks the one that ends);
//!   a monitor that has ended has a closed mailbox, and is not told.
//! - A link is an entry in both processes' `links`, made before the child's first
//!   slice (`spawn_link`). When one of the two ends it leaves the other's `links`;
//!   if it failed or was cancelled it also cancels the other (which, ending cancelled,
//!   does the same to its own links: a tree stops together).
//! - No two records' locks are held at once: `finish` takes the entries under its
//!   lock, and this file acts on them after.

use crate::Outcome;
use crate::process::ProcessCore;
use crate::process::core::State;
use crate::transfer::{Message, Value};
use std::sync::{Arc, Weak};

/// What a finished process's monitors and links are told.
pub(super) struct Ended {
    outcome: Outcome,
    cancelled: bool,
    monitors: Vec<Weak<ProcessCore>>,
    links: Vec<Weak<ProcessCore>>,
}

/// Monitors of one process kept before the dead ones are swept out (then twice as
/// many as the live ones).
const MONITORS_BEFORE_SWEEP: usize = 16;

impl ProcessCore {
    /// Takes, under the lock of a finishing process, what its watchers are told.
    pub(super) fn ending_of(&self, state: &mut State) -> Ended {
        Ended {
            outcome: state.outcome.clone(),
            cancelled: state.cancelled,
            monitors: std::mem::take(&mut state.monitors),
            links: state.links.drain().map(|(_, link)| link).collect(),
        }
    }

    /// Tells the monitors, and the linked processes, of this process's end.
    pub(super) fn tell_watchers(self: &Arc<Self>, ended: Ended) {
        let Ended {
            outcome,
            cancelled,
            monitors,
            links,
        } = ended;
        if !monitors.is_empty() {
            let message = self.down_message(&outcome, cancelled);
            for monitor in monitors.iter().filter_map(Weak::upgrade) {
                let _ = monitor.mailbox().start_send(message.clone());
            }
        }
        let stops_links = matches!(outcome, Outcome::Failed(_));
        for link in links.iter().filter_map(Weak::upgrade) {
            link.unlink(self.id());
            if stops_links {
                let how = if cancelled { "was cancelled" } else { "failed" };
                link.cancel(Some(&format!("linked process#{} {how}", self.id())));
            }
        }
    }

    /// Makes `monitor` told of this process's end: now if it has ended already (which
    /// counts as joining it, as a monitor set before the end does).
    pub(crate) fn add_monitor(self: &Arc<Self>, monitor: &Arc<ProcessCore>) {
        let ended = {
            let mut state = self.lock();
            if matches!(state.outcome, Outcome::Running) {
                if state.monitors.len() >= MONITORS_BEFORE_SWEEP
                    && state.monitors.len().is_power_of_two()
                {
                    state.monitors.retain(|m| m.strong_count() > 0);
                }
                state.monitors.push(Arc::downgrade(monitor));
                return;
            }
            // Told of the failure now, the monitor attends to it as a late join does:
            // it no longer fails the program's exit status.
            state.joined = true;
            (state.outcome.clone(), state.cancelled)
        };
        let message = self.down_message(&ended.0, ended.1);
        let _ = monitor.mailbox().start_send(message);
    }

    /// Links `self` and `other` (both running; see the module invariants).
    pub(crate) fn link(self: &Arc<Self>, other: &Arc<ProcessCore>) {
        self.lock().links.insert(other.id(), Arc::downgrade(other));
        other.lock().links.insert(self.id(), Arc::downgrade(self));
    }

    fn unlink(&self, id: u64) {
        self.lock().links.remove(&id);
    }

    /// `{"down", p, status, value_or_error...}`: status `"returned"` (then every
    /// returned value), `"failed"` (the error) or `"cancelled"` (its message).
    fn down_message(self: &Arc<Self>, outcome: &Outcome, cancelled: bool) -> Message {
        let text = |s: &str| Value::String(s.into());
        let mut fields = vec![text("down"), Value::Process(self.clone())];
        let mut tables = Vec::new();
        match outcome {
            Outcome::Finished(results) => {
                fields.push(text("returned"));
                // The results' tables follow the message's own (index 0).
                fields.extend(results.values.iter().map(|v| shifted(v, 1)));
                tables.extend(results.tables.iter().map(|pairs| {
                    pairs
                        .iter()
                        .map(|(k, v)| (shifted(k, 1), shifted(v, 1)))
                        .collect()
                }));
            }
            Outcome::Failed(error) => {
                fields.push(text(if cancelled { "cancelled" } else { "failed" }));
                fields.push(text(error));
            }
            Outcome::Running => {}
        }
        let pairs = fields
            .into_iter()
            .enumerate()
            .map(|(i, v)| (Value::Integer(i as i64 + 1), v))
            .collect();
        tables.insert(0, pairs);
        Message {
            values: std::iter::once(Value::Table(0)).collect(),
            tables: tables.into(),
        }
    }
}

/// `value` with its table index moved up by `by` (a copied table of a message whose
/// tables are placed after `by` others).
fn shifted(value: &Value, by: usize) -> Value {
    match value {
        Value::Table(index) => Value::Table(index + by),
        other => other.clone(),
    }
}
