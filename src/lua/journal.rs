//! Watch mode's memory between runs: which tasks a run started, which commands it sent (with
//! their receipts) and which checkpoints it passed. Pure bookkeeping — no Lua, no browser — so
//! every rule is unit-tested.
//!
//! The rules (documented in README "Watch mode"):
//! - **Tasks survive.** The nth `browser.start{}` (no `id`) of a run returns the task the nth
//!   one of the previous run got, while that task is alive.
//! - **Checkpoints.** `browser.checkpoint(name)` marks a point in the script. A re-run resumes
//!   after the last checkpoint the previous run passed whose line, and every line above it, are
//!   unchanged (and no required module changed): the code above it runs again — so its locals
//!   exist — but every command it sends is answered from the journal of the previous run instead
//!   of being sent again. A submitted form is not submitted twice.
//! - **Divergence.** If the replayed code asks for a command the journal does not hold next
//!   (other task, method or params), the replay stops there and the run goes on live.

use serde_json::Value;

use crate::browser::task::TaskId;
use crate::protocol::Receipt;

/// One command a run sent.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The task it was sent to (`None` for `start` and other task-less commands).
    pub task: Option<TaskId>,
    /// The method as called.
    pub method: String,
    /// The params, as JSON text (the comparison key).
    pub params: String,
    /// What came back (`None` while it runs, or when the run was aborted before it answered).
    pub receipt: Option<Receipt>,
}

/// A checkpoint a run passed.
#[derive(Debug, Clone, PartialEq)]
pub struct Checkpoint {
    /// Its name.
    pub name: String,
    /// Its line in the script (1-based).
    pub line: usize,
    /// How many commands the run had sent when it got there.
    pub entries: usize,
    /// The URL of each of the run's tasks at that moment.
    pub urls: Vec<(TaskId, String)>,
}

/// A finished (or aborted) run, as the next one sees it.
#[derive(Debug, Clone, Default)]
struct RunRecord {
    source: String,
    entries: Vec<Entry>,
    checkpoints: Vec<Checkpoint>,
    /// Every task the run started or took over.
    tasks: Vec<TaskId>,
    /// The tasks of its `browser.start{}` calls without an id, in order.
    anonymous: Vec<TaskId>,
}

/// Replaying the previous run's commands up to a checkpoint.
#[derive(Debug, Clone)]
struct Replay {
    entries: Vec<Entry>,
    next: usize,
    target: Checkpoint,
    /// The target's position among the previous run's checkpoints.
    target_ordinal: usize,
}

/// What a replayed command gets.
#[derive(Debug, PartialEq)]
pub enum Replayed {
    /// Not replaying: send it.
    Live,
    /// The journal's receipt for it.
    Hit(Receipt),
    /// The code asked for something else than the journal holds next; the replay has stopped.
    Diverged {
        /// The command number (1-based) where it happened.
        at: usize,
        /// What the journal held.
        expected: String,
    },
}

/// What passing a checkpoint means for the run.
#[derive(Debug, PartialEq)]
pub enum AtCheckpoint {
    /// Recorded. `live`: the run is live here, so the caller reads the tasks' URLs and hands
    /// them to [`Journal::set_urls`] (a replaying run takes them from the journal).
    Recorded {
        /// Whether the URLs are still to be set.
        live: bool,
    },
    /// The replay reached its target: from here the run is live. The tasks should be at these
    /// URLs, as they were when the previous run passed the checkpoint.
    Resumed {
        /// Tasks and their URLs at the checkpoint.
        urls: Vec<(TaskId, String)>,
    },
    /// The replay reached another checkpoint than expected; it has stopped, and the run is
    /// live from here (the caller sets the URLs, as for `Recorded { live: true }`).
    Diverged,
}

/// Where a new run resumes.
#[derive(Debug, PartialEq)]
pub struct Resume {
    /// The checkpoint's name.
    pub name: String,
    /// Its line.
    pub line: usize,
    /// How many commands will be answered from the journal.
    pub commands: usize,
}

/// The journal of the run in progress and the record of the previous one.
#[derive(Debug, Default)]
pub struct Journal {
    current: RunRecord,
    previous: RunRecord,
    replay: Option<Replay>,
    checkpoints_passed: usize,
    anonymous_starts: usize,
    /// A required module changed since `previous` was recorded: no resume until a run that
    /// did something replaces it.
    modules_dirty: bool,
    /// Commands this run sent or replayed.
    pub commands: usize,
    /// Of which answered from the journal.
    pub replayed: usize,
    /// Of which failed (`ok == false`).
    pub failures: usize,
}

/// JSON text with object keys sorted at every level: the comparison key for params (a Lua
/// table's `pairs` order differs from one Lua state to the next).
fn canonical(value: &Value) -> String {
    fn write(value: &Value, out: &mut String) {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                out.push('{');
                for (i, k) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(k.clone()).to_string());
                    out.push(':');
                    write(&map[k], out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(v, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut out = String::new();
    write(value, &mut out);
    out
}

/// How many leading lines `a` and `b` share.
fn common_lines(a: &str, b: &str) -> usize {
    a.lines().zip(b.lines()).take_while(|(x, y)| x == y).count()
}

impl Journal {
    /// Starts a new run of `source`: the run so far becomes the previous one, and the resume
    /// point is chosen (none when `modules_changed`, or no checkpoint qualifies).
    pub fn begin_run(&mut self, source: String, modules_changed: bool) -> Option<Resume> {
        let ended = std::mem::take(&mut self.current);
        let did_nothing =
            ended.entries.is_empty() && ended.checkpoints.is_empty() && ended.tasks.is_empty();
        // A run that failed before its first command (a syntax error) leaves the record of
        // the one before it in place: that one's journal still matches the browser.
        if did_nothing {
            self.modules_dirty |= modules_changed;
        } else {
            // Starts the ended run did not get to keep their tasks for the next one.
            let mut anonymous = ended.anonymous.clone();
            for t in self.previous.anonymous.iter().skip(anonymous.len()) {
                if !anonymous.contains(t) {
                    anonymous.push(*t);
                }
            }
            let mut tasks = ended.tasks.clone();
            for t in &anonymous {
                if !tasks.contains(t) {
                    tasks.push(*t);
                }
            }
            self.previous = RunRecord {
                tasks,
                anonymous,
                ..ended
            };
            self.modules_dirty = modules_changed;
        }
        self.current.source = source;
        self.replay = None;
        self.checkpoints_passed = 0;
        self.anonymous_starts = 0;
        self.commands = 0;
        self.replayed = 0;
        self.failures = 0;
        if self.modules_dirty {
            return None;
        }
        let same = common_lines(&self.previous.source, &self.current.source);
        let (ordinal, target) = self
            .previous
            .checkpoints
            .iter()
            .enumerate()
            .rev()
            .find(|(_, c)| c.line <= same)?;
        let entries =
            self.previous.entries[..target.entries.min(self.previous.entries.len())].to_vec();
        let resume = Resume {
            name: target.name.clone(),
            line: target.line,
            commands: entries.len(),
        };
        self.replay = Some(Replay {
            entries,
            next: 0,
            target: target.clone(),
            target_ordinal: ordinal,
        });
        Some(resume)
    }

    /// Whether commands are being answered from the journal (sleeps are skipped then).
    pub fn replaying(&self) -> bool {
        self.replay.is_some()
    }

    /// Answers a command from the journal while replaying.
    pub fn replay_next(&mut self, task: Option<TaskId>, method: &str, params: &Value) -> Replayed {
        let Some(replay) = self.replay.as_mut() else {
            return Replayed::Live;
        };
        let params = canonical(params);
        match replay.entries.get(replay.next) {
            Some(Entry {
                task: t,
                method: m,
                params: p,
                receipt: Some(receipt),
            }) if *t == task && m == method && *p == params => {
                replay.next += 1;
                let receipt = receipt.clone();
                self.replayed += 1;
                Replayed::Hit(receipt)
            }
            other => {
                let expected = match other {
                    Some(e) => {
                        let mut params: String = e.params.chars().take(100).collect();
                        if params.len() < e.params.len() {
                            params.push('…');
                        }
                        format!("{} {params}", e.method)
                    }
                    None => format!("checkpoint `{}`", replay.target.name),
                };
                let at = replay.next + 1;
                self.replay = None;
                Replayed::Diverged { at, expected }
            }
        }
    }

    /// Stops replaying (a replayed receipt could not be used, e.g. its task is gone).
    pub fn stop_replay(&mut self) {
        self.replay = None;
    }

    /// Takes the journal's next slot for a command about to be sent, so the journal keeps the
    /// order commands were sent in (coroutines may finish them in another order).
    pub fn reserve(&mut self, task: Option<TaskId>, method: &str, params: &Value) -> usize {
        self.current.entries.push(Entry {
            task,
            method: method.to_string(),
            params: canonical(params),
            receipt: None,
        });
        self.current.entries.len() - 1
    }

    /// Fills a reserved slot with the command's receipt.
    pub fn complete(&mut self, slot: usize, receipt: &Receipt) {
        self.commands += 1;
        if !receipt.ok {
            self.failures += 1;
        }
        if let Some(entry) = self.current.entries.get_mut(slot) {
            entry.receipt = Some(receipt.clone());
        }
    }

    /// Records a command answered without being sent (replayed, or a task taken over).
    pub fn record(
        &mut self,
        task: Option<TaskId>,
        method: &str,
        params: &Value,
        receipt: &Receipt,
    ) {
        let slot = self.reserve(task, method, params);
        self.complete(slot, receipt);
    }

    /// Counts one `browser.start{}` without an id (sent, replayed or taken over) and answers
    /// the task the same one of the previous run got, unless this run already has it (the
    /// caller checks that it is alive).
    pub fn anonymous_start(&mut self) -> Option<TaskId> {
        let task = self.previous.anonymous.get(self.anonymous_starts).copied();
        self.anonymous_starts += 1;
        task.filter(|t| !self.current.tasks.contains(t))
    }

    /// Notes a task this run started or took over; `anonymous` for `browser.start{}` without id.
    pub fn started(&mut self, task: TaskId, anonymous: bool) {
        if !self.current.tasks.contains(&task) {
            self.current.tasks.push(task);
        }
        if anonymous && !self.current.anonymous.contains(&task) {
            self.current.anonymous.push(task);
        }
    }

    /// This run's tasks.
    pub fn tasks(&self) -> &[TaskId] {
        &self.current.tasks
    }

    /// Passing `browser.checkpoint(name)` at `line`: its index (for [`Journal::set_urls`]) and
    /// what it means for the run.
    pub fn checkpoint(&mut self, name: &str, line: usize) -> (usize, AtCheckpoint) {
        let ordinal = self.checkpoints_passed;
        self.checkpoints_passed += 1;
        let entries = self.current.entries.len();
        let (outcome, urls) = match self.replay.take() {
            None => (AtCheckpoint::Recorded { live: true }, Vec::new()),
            Some(r)
                if r.target_ordinal == ordinal
                    && r.target.name == name
                    && r.next == r.entries.len() =>
            {
                let urls = r.target.urls.clone();
                (AtCheckpoint::Resumed { urls: urls.clone() }, urls)
            }
            Some(r) if ordinal < r.target_ordinal => {
                // An earlier checkpoint on the way to the target: keep replaying, and keep it
                // with the URLs the previous run saw there.
                let urls = self
                    .previous
                    .checkpoints
                    .get(ordinal)
                    .map(|c| c.urls.clone())
                    .unwrap_or_default();
                self.replay = Some(r);
                (AtCheckpoint::Recorded { live: false }, urls)
            }
            Some(_) => (AtCheckpoint::Diverged, Vec::new()),
        };
        self.current.checkpoints.push(Checkpoint {
            name: name.to_string(),
            line,
            entries,
            urls,
        });
        (self.current.checkpoints.len() - 1, outcome)
    }

    /// Sets the URLs of a checkpoint passed live.
    pub fn set_urls(&mut self, index: usize, urls: Vec<(TaskId, String)>) {
        if let Some(c) = self.current.checkpoints.get_mut(index) {
            c.urls = urls;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const T1: TaskId = TaskId(1);

    fn ok(method: &str) -> Receipt {
        Receipt::success(method, json!({"n": 1}), 1.0)
    }

    /// Runs `script` (a list of commands and checkpoints) through the journal as a run would,
    /// answering live commands with `ok`; returns what each step got.
    fn run(j: &mut Journal, script: &[&str]) -> Vec<String> {
        let mut seen = Vec::new();
        for (i, step) in script.iter().enumerate() {
            if let Some(name) = step.strip_prefix('#') {
                let (index, got) = j.checkpoint(name, i + 1);
                if matches!(
                    got,
                    AtCheckpoint::Recorded { live: true } | AtCheckpoint::Diverged
                ) {
                    j.set_urls(index, vec![(T1, format!("http://x/{name}"))]);
                }
                seen.push(format!("{got:?}"));
                continue;
            }
            let params = json!({ "step": step });
            match j.replay_next(Some(T1), step, &params) {
                Replayed::Hit(r) => {
                    j.record(Some(T1), step, &params, &r);
                    seen.push(format!("replayed {step}"));
                }
                other => {
                    if let Replayed::Diverged { at, .. } = other {
                        seen.push(format!("diverged at {at}"));
                    }
                    let slot = j.reserve(Some(T1), step, &params);
                    j.complete(slot, &ok(step));
                    seen.push(format!("sent {step}"));
                }
            }
        }
        seen
    }

    fn source(script: &[&str]) -> String {
        script.join("\n")
    }

    #[test]
    fn unchanged_code_above_a_checkpoint_is_replayed_not_resent() {
        let first = ["login", "submit", "#logged-in", "browse"];
        let mut j = Journal::default();
        assert_eq!(j.begin_run(source(&first), false), None);
        run(&mut j, &first);
        let second = ["login", "submit", "#logged-in", "browse", "extra"];
        let resume = j.begin_run(source(&second), false).unwrap();
        assert_eq!(
            (resume.name.as_str(), resume.line, resume.commands),
            ("logged-in", 3, 2)
        );
        let seen = run(&mut j, &second);
        assert_eq!(seen[..2], ["replayed login", "replayed submit"]);
        assert_eq!(
            seen[2],
            format!(
                "{:?}",
                AtCheckpoint::Resumed {
                    urls: vec![(T1, "http://x/logged-in".into())]
                }
            )
        );
        assert_eq!(seen[3..], ["sent browse", "sent extra"]);
        assert_eq!((j.commands, j.replayed), (4, 2));
    }

    #[test]
    fn a_change_above_the_checkpoint_or_in_a_module_runs_everything_live() {
        let first = ["login", "#a", "browse"];
        let mut j = Journal::default();
        j.begin_run(source(&first), false);
        run(&mut j, &first);
        assert_eq!(
            j.begin_run(source(&["login2", "#a", "browse"]), false),
            None
        );
        run(&mut j, &["login2", "#a", "browse"]);
        assert_eq!(j.begin_run(source(&["login2", "#a", "browse"]), true), None);
    }

    #[test]
    fn the_last_qualifying_checkpoint_wins_and_earlier_ones_are_kept() {
        let first = ["a", "#one", "b", "#two", "c"];
        let mut j = Journal::default();
        j.begin_run(source(&first), false);
        run(&mut j, &first);
        // Changed below `two`: resume after `two`, replaying a, b.
        let second = ["a", "#one", "b", "#two", "c2"];
        assert_eq!(j.begin_run(source(&second), false).unwrap().name, "two");
        let seen = run(&mut j, &second);
        assert_eq!(seen[0], "replayed a");
        assert_eq!(
            seen[1],
            format!("{:?}", AtCheckpoint::Recorded { live: false })
        );
        assert_eq!(seen[2], "replayed b");
        assert!(seen[3].starts_with("Resumed"));
        // The run that resumed recorded both checkpoints again: a third run can resume too.
        let third = ["a", "#one", "b2", "#two", "c2"];
        assert_eq!(j.begin_run(source(&third), false).unwrap().name, "one");
    }

    #[test]
    fn divergence_stops_the_replay_and_goes_live() {
        let first = ["a", "b", "#cp", "c"];
        let mut j = Journal::default();
        j.begin_run(source(&first), false);
        run(&mut j, &first);
        j.begin_run(source(&first), false).unwrap();
        // Same source, but the code asks for something else (e.g. it branched on time).
        let seen = run(&mut j, &["a", "x", "#cp", "c"]);
        assert_eq!(seen[0], "replayed a");
        assert_eq!(seen[1..3], ["diverged at 2", "sent x"]);
        assert_eq!(
            seen[3],
            format!("{:?}", AtCheckpoint::Recorded { live: true })
        );
        assert!(!j.replaying());
        // The checkpoint passed live after the divergence got its URLs: a later resume can
        // put the page back.
        j.begin_run(source(&["a", "b", "#cp", "c2"]), false)
            .unwrap();
        let seen = run(&mut j, &["a", "x", "#cp", "c2"]);
        assert_eq!(
            seen[2],
            format!(
                "{:?}",
                AtCheckpoint::Resumed {
                    urls: vec![(T1, "http://x/cp".into())]
                }
            )
        );
    }

    #[test]
    fn params_compare_whatever_the_key_order() {
        let a: Value =
            serde_json::from_str(r#"{"b":1,"a":{"y":[1,{"q":2,"p":3}],"x":"s"}}"#).unwrap();
        let b: Value =
            serde_json::from_str(r#"{"a":{"x":"s","y":[1,{"p":3,"q":2}]},"b":1}"#).unwrap();
        assert_eq!(canonical(&a), canonical(&b));
        assert_eq!(
            canonical(&a),
            r#"{"a":{"x":"s","y":[1,{"p":3,"q":2}]},"b":1}"#
        );
    }

    #[test]
    fn a_run_that_did_nothing_keeps_the_last_record() {
        let first = ["login", "#cp", "browse"];
        let mut j = Journal::default();
        j.begin_run(source(&first), false);
        j.started(TaskId(5), true);
        run(&mut j, &first);
        // A syntax error: no command, no task.
        j.begin_run("local x = (".into(), false);
        let resume = j.begin_run(source(&first), false).unwrap();
        assert_eq!(resume.name, "cp");
        assert_eq!(j.anonymous_start(), Some(TaskId(5)));
    }

    #[test]
    fn a_module_change_is_not_forgotten_by_a_run_that_did_nothing() {
        let first = ["login", "#cp", "browse"];
        let mut j = Journal::default();
        j.begin_run(source(&first), false);
        run(&mut j, &first);
        // The module changed, but that run failed at once (syntax error in the script)...
        j.begin_run("local x = (".into(), true);
        // ...so the script's fix must still not replay a journal made with the old module.
        assert_eq!(j.begin_run(source(&first), false), None);
        run(&mut j, &first);
        // That live run made a new record: resuming works again.
        assert!(j.begin_run(source(&first), false).is_some());
    }

    #[test]
    fn tasks_are_handed_over_by_order_of_anonymous_start() {
        let mut j = Journal::default();
        j.begin_run(String::new(), false);
        assert_eq!(j.anonymous_start(), None);
        j.started(TaskId(7), true);
        j.started(TaskId(99), false); // browser.start{ id = 99 }: not an anonymous start
        assert_eq!(j.anonymous_start(), None);
        j.started(TaskId(8), true);
        j.begin_run(String::new(), false);
        assert_eq!(j.anonymous_start(), Some(TaskId(7)));
        j.started(TaskId(7), true);
        assert_eq!(j.tasks(), &[TaskId(7)]);
        // This run stopped after one start: the next still gets both, in order.
        j.begin_run(String::new(), false);
        assert_eq!(j.anonymous_start(), Some(TaskId(7)));
        j.started(TaskId(7), true);
        assert_eq!(j.anonymous_start(), Some(TaskId(8)));
        // A task this run already has is never handed over twice.
        j.started(TaskId(8), false);
        j.begin_run(String::new(), false);
        j.started(TaskId(8), false);
        assert_eq!(j.anonymous_start(), Some(TaskId(7)));
        assert_eq!(j.anonymous_start(), None, "8 is taken already");
    }

    #[test]
    fn the_journal_keeps_the_order_commands_were_sent_in() {
        let mut j = Journal::default();
        j.begin_run(source(&["x"]), false);
        let a = j.reserve(Some(T1), "a", &json!({}));
        let b = j.reserve(Some(T1), "b", &json!({}));
        j.complete(b, &ok("b"));
        j.complete(a, &ok("a"));
        j.checkpoint("cp", 1);
        j.begin_run(source(&["x", "y"]), false).unwrap();
        assert!(matches!(
            j.replay_next(Some(T1), "a", &json!({})),
            Replayed::Hit(_)
        ));
        assert!(matches!(
            j.replay_next(Some(T1), "b", &json!({})),
            Replayed::Hit(_)
        ));
    }

    #[test]
    fn a_command_that_never_answered_is_not_replayed() {
        let mut j = Journal::default();
        j.begin_run(source(&["x"]), false);
        j.reserve(Some(T1), "click", &json!({})); // aborted by a save mid-command
        j.checkpoint("cp", 1);
        j.begin_run(source(&["x"]), false).unwrap();
        assert!(matches!(
            j.replay_next(Some(T1), "click", &json!({})),
            Replayed::Diverged { at: 1, .. }
        ));
    }
}
