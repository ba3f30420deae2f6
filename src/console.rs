//! The hosts' human console: shows every waiting human-input request on the terminal and turns
//! what the person types into `submit_human_input` calls, step by step.
//!
//! [`Console`] is the pure part (what to print, what to ask, what a typed line means); the
//! hosts feed it the desk's waiting requests whenever the desk changes and the lines the person
//! types: `run` and `watch` from a stdin reader ([`serve`]), the REPL through its own prompt.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::browser::task::TaskId;
use crate::clock::epoch_ms;
use crate::executor::Executor;
use crate::human::{option_label, Request, Status};

/// The question being asked now.
#[derive(Debug, Clone, PartialEq)]
struct Asking {
    request: String,
    task: u64,
    /// The step, for step requests.
    step: Option<String>,
    options: Vec<String>,
    multi: bool,
}

/// What the console has shown and is asking.
#[derive(Debug, Default)]
pub struct Console {
    shown: BTreeSet<String>,
    asking: Option<Asking>,
    /// Requests the person put aside (Ctrl-C at the question); not asked until `unskip`.
    skipped: BTreeSet<String>,
}

fn countdown(r: &Request, now: u64) -> String {
    let s = r.seconds_left(now);
    if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

impl Console {
    /// Takes the requests waiting now (oldest first); answers the lines to print: closed
    /// questions, newly waiting requests, and the question to answer next.
    pub fn update(&mut self, waiting: &[Request], now: u64) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(a) = &self.asking {
            let still = waiting.iter().find(|r| r.id == a.request);
            let open = still.is_some_and(|r| match &a.step {
                Some(step) => r.steps.iter().any(|s| &s.id == step && s.answer.is_none()),
                None => r.answer.is_none(),
            });
            if !open {
                if still.is_none() {
                    out.push(format!(
                        "[human] {} is closed (answered elsewhere or expired)",
                        a.request
                    ));
                }
                self.asking = None;
            }
        }
        self.skipped
            .retain(|id| waiting.iter().any(|r| &r.id == id));
        for r in waiting {
            if self.shown.insert(r.id.clone()) {
                out.push(self.describe(r, now));
            }
        }
        if self.asking.is_none() {
            if let Some(r) = waiting.iter().find(|r| {
                matches!(r.status(now), Status::Pending | Status::Partial)
                    && !self.skipped.contains(&r.id)
            }) {
                let asking = match r.pending_steps().first() {
                    Some(step) => {
                        let options: Vec<String> = step
                            .extra
                            .get("options")
                            .and_then(Value::as_array)
                            .map(|o| o.iter().filter_map(option_label).collect())
                            .unwrap_or_default();
                        let multi = step.extra.get("multiSelect") == Some(&Value::Bool(true));
                        let mut q = format!("[human] {} step {}: {}", r.id, step.id, step.prompt);
                        for (i, o) in options.iter().enumerate() {
                            q.push_str(&format!("\n    {}) {o}", i + 1));
                        }
                        if !options.is_empty() {
                            q.push_str(if multi {
                                "\n    (numbers separated by commas, or type text)"
                            } else {
                                "\n    (a number, or type text)"
                            });
                        }
                        out.push(q);
                        Asking {
                            request: r.id.clone(),
                            task: r.task,
                            step: Some(step.id.clone()),
                            options,
                            multi,
                        }
                    }
                    None => {
                        out.push(format!(
                            "[human] {}: type your answer (Enter alone answers \"done\")",
                            r.id
                        ));
                        Asking {
                            request: r.id.clone(),
                            task: r.task,
                            step: None,
                            options: Vec::new(),
                            multi: false,
                        }
                    }
                };
                self.asking = Some(asking);
            }
        }
        out
    }

    fn describe(&self, r: &Request, now: u64) -> String {
        let mut text = format!(
            "[human] request {} (expires in {}): {}",
            r.id,
            countdown(r, now),
            if r.prompt.is_empty() {
                "(no prompt)"
            } else {
                &r.prompt
            }
        );
        if r.steps.len() > 1 {
            for s in &r.steps {
                let mark = if s.answer.is_some() { "x" } else { " " };
                text.push_str(&format!("\n    [{mark}] {} {}", s.id, s.prompt));
            }
        }
        if let Some(path) = &r.image_path {
            text.push_str(&format!("\n    image: {path}"));
        }
        text
    }

    /// Puts the question being asked aside: its request is not asked again until
    /// [`Console::unskip`].
    pub fn skip(&mut self) {
        if let Some(a) = self.asking.take() {
            self.skipped.insert(a.request);
        }
    }

    /// Asks the skipped requests again.
    pub fn unskip(&mut self) {
        self.skipped.clear();
    }

    /// Which question is being asked (request and step), to match a typed line against it.
    pub fn asking_key(&self) -> Option<(String, Option<String>)> {
        self.asking
            .as_ref()
            .map(|a| (a.request.clone(), a.step.clone()))
    }

    /// The prompt for the question being asked, if any.
    pub fn prompt(&self) -> Option<String> {
        self.asking.as_ref().map(|a| match &a.step {
            Some(step) => format!("answer {step}> "),
            None => "answer> ".to_string(),
        })
    }

    /// A typed line as a `submit_human_input` call `(task, params)`, or `None` when nothing is
    /// being asked. The question is done with; the next [`Console::update`] asks the next one.
    pub fn answer(&mut self, line: &str) -> Option<(TaskId, Value)> {
        let key = self.asking_key()?;
        self.answer_for(&key, line)
    }

    /// Like [`Console::answer`], but only when the question being asked is still `key` (the
    /// one the person saw): a line typed at a question that has closed meanwhile is not sent
    /// to the next one.
    pub fn answer_for(
        &mut self,
        key: &(String, Option<String>),
        line: &str,
    ) -> Option<(TaskId, Value)> {
        if self.asking_key().as_ref() != Some(key) {
            return None;
        }
        let a = self.asking.take()?;
        let line = line.trim();
        let value = if a.options.is_empty() {
            Value::String(if a.step.is_none() && line.is_empty() {
                "done".into()
            } else {
                line.into()
            })
        } else {
            let picks: Option<Vec<&String>> = line
                .split(',')
                .map(|n| {
                    n.trim()
                        .parse::<usize>()
                        .ok()
                        .and_then(|i| i.checked_sub(1))
                        .and_then(|i| a.options.get(i))
                })
                .collect();
            match picks {
                Some(p) if a.multi && !p.is_empty() => json!(p),
                Some(p) if p.len() == 1 => json!(p[0]),
                _ => Value::String(line.into()),
            }
        };
        let params = match &a.step {
            Some(step) => json!({"requestId": a.request, "answers": {step.clone(): value}}),
            None => json!({"requestId": a.request, "answer": value}),
        };
        Some((TaskId(a.task), params))
    }
}

/// Submits a line typed at question `key` (only if that question is still the one asked) and
/// answers what to tell the person. The one path from a terminal to `submit_human_input`, for
/// every host.
pub async fn submit_line(
    console: &mut Console,
    executor: &Executor,
    key: &(String, Option<String>),
    line: &str,
) -> String {
    let Some((task, params)) = console.answer_for(key, line) else {
        return "[human] that question closed before your answer; nothing was sent".into();
    };
    let r = executor
        .execute(Some(task), "submit_human_input", params)
        .await;
    if r.ok {
        format!(
            "[human] submitted: {}",
            r.data["status"].as_str().unwrap_or("?")
        )
    } else {
        format!("[human] not accepted: {}", r.msg.unwrap_or_default())
    }
}

/// The waiting requests, oldest first.
fn waiting(executor: &Executor, now: u64) -> Vec<Request> {
    executor
        .engine()
        .with_desk(|d| d.waiting(now).into_iter().cloned().collect())
}

/// Runs the console for `run` and `watch`: shows requests as they come and submits the lines
/// the person types. The terminal is read only from the first question on (a background job
/// that never asks anything is never stopped by SIGTTIN, and `io.read` keeps stdin until then).
/// Never returns; it ends with the host.
pub async fn serve(executor: Executor) {
    use std::io::Write;
    let print = |text: &str| {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{text}");
        let _ = out.flush();
    };
    let mut console = Console::default();
    let mut changes = executor.engine().desk_changes();
    let mut lines: Option<mpsc::UnboundedReceiver<String>> = None;
    // The question the person sees now (the prompt printed last).
    let mut shown: Option<(String, Option<String>)> = None;
    loop {
        let now = epoch_ms();
        let list = waiting(&executor, now);
        for line in console.update(&list, now) {
            print(&line);
        }
        if let (Some(key), Some(prompt)) = (console.asking_key(), console.prompt()) {
            if shown.as_ref() != Some(&key) {
                if lines.is_none() {
                    lines = Some(read_lines());
                }
                let mut out = std::io::stdout().lock();
                let _ = write!(out, "{prompt}");
                let _ = out.flush();
                shown = Some(key);
            }
        }
        let next_expiry = executor.engine().with_desk(|d| d.next_expiry(now));
        let wake = next_expiry.map_or(Duration::from_secs(3600), |at| {
            Duration::from_millis(at.saturating_sub(now).saturating_add(5))
        });
        let line = async {
            match lines.as_mut() {
                Some(rx) => rx.recv().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            changed = changes.changed() => {
                if changed.is_err() {
                    std::future::pending::<()>().await;
                }
            }
            _ = tokio::time::sleep(wake) => {}
            line = line => {
                let Some(line) = line else {
                    // The terminal is gone: leave the requests to other submitters.
                    std::future::pending::<()>().await;
                    return;
                };
                // A line with no question shown cannot match one (the key never equals this).
                let key = shown.take().unwrap_or_default();
                print(&submit_line(&mut console, &executor, &key, &line).await);
            }
        }
    }
}

/// Lines typed on the terminal, read on a thread of their own.
fn read_lines() -> mpsc::UnboundedReceiver<String> {
    use std::io::BufRead;
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// Whether the hosts should prompt for human input: stdin is a terminal. Otherwise nothing is
/// prompted and requests wait for another submitter.
pub fn on_terminal() -> bool {
    use std::io::IsTerminal;
    std::io::stdin().is_terminal()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::human::{Desk, NewRequest, Origin};
    use serde_json::Map;

    const NOW: u64 = 1_800_000_000_000;

    fn desk_with_question() -> (Desk, String) {
        let mut desk = Desk::default();
        let mut color = Map::new();
        color.insert("options".into(), json!(["red", {"label": "blue"}]));
        let mut tags = Map::new();
        tags.insert("options".into(), json!(["a", "b", "c"]));
        tags.insert("multiSelect".into(), json!(true));
        let new = NewRequest {
            task: 9,
            prompt: "two questions".into(),
            steps: vec![
                (Some("color".into()), "Color?".into(), color),
                (Some("tags".into()), "Tags?".into(), tags),
            ],
            expires_at: NOW + 90_000,
        };
        let id = desk.open(Origin::Question, new, 1, NOW).id.clone();
        (desk, id)
    }

    #[test]
    fn asks_each_step_and_maps_numbers_to_options() {
        let (mut desk, id) = desk_with_question();
        let mut console = Console::default();
        let list: Vec<Request> = desk.waiting(NOW).into_iter().cloned().collect();
        let out = console.update(&list, NOW);
        assert!(
            out[0].contains("expires in 1m30s") && out[0].contains("color Color?"),
            "{out:?}"
        );
        assert!(
            out[1].contains("1) red") && out[1].contains("2) blue"),
            "{out:?}"
        );
        assert_eq!(console.prompt().as_deref(), Some("answer color> "));
        let (task, params) = console.answer("2").unwrap();
        assert_eq!(task, TaskId(9));
        assert_eq!(
            params,
            json!({"requestId": id, "answers": {"color": "blue"}})
        );
        assert_eq!(console.prompt(), None);
        // The submit lands; the next update asks the next step, a multi-select.
        let sub = crate::human::Submission {
            answers: params["answers"].as_object().cloned(),
            ..Default::default()
        };
        desk.submit(&id, sub, NOW).unwrap();
        let list: Vec<Request> = desk.waiting(NOW).into_iter().cloned().collect();
        let out = console.update(&list, NOW);
        assert_eq!(out.len(), 1, "the request is not shown twice: {out:?}");
        assert!(out[0].contains("step tags"), "{out:?}");
        let (_, params) = console.answer("1, 3").unwrap();
        assert_eq!(params["answers"]["tags"], json!(["a", "c"]));
    }

    #[test]
    fn a_skipped_request_is_not_asked_until_unskipped() {
        let (desk, id) = desk_with_question();
        let mut console = Console::default();
        let list: Vec<Request> = desk.waiting(NOW).into_iter().cloned().collect();
        console.update(&list, NOW);
        console.skip();
        assert!(
            console.update(&list, NOW).is_empty(),
            "not shown nor asked again"
        );
        assert_eq!(console.prompt(), None);
        console.unskip();
        let out = console.update(&list, NOW);
        assert!(out[0].contains(&format!("{id} step color")), "{out:?}");
        // A line meant for another question is not sent to this one.
        let other = ("aq-0-0".to_string(), Some("color".to_string()));
        assert!(console.answer_for(&other, "1").is_none());
        assert!(console.prompt().is_some(), "the question stands");
    }

    #[test]
    fn text_single_answers_and_closed_requests() {
        let mut desk = Desk::default();
        let new = NewRequest {
            task: 1,
            prompt: "log in".into(),
            steps: vec![],
            expires_at: NOW + 5000,
        };
        let id = desk.open(Origin::Action, new, 1, NOW).id.clone();
        let mut console = Console::default();
        let list: Vec<Request> = desk.waiting(NOW).into_iter().cloned().collect();
        console.update(&list, NOW);
        assert_eq!(console.prompt().as_deref(), Some("answer> "));
        let (_, params) = console.answer("").unwrap();
        assert_eq!(params, json!({"requestId": id, "answer": "done"}));
        // Asked again, then answered elsewhere: the console says so and stops asking.
        let list: Vec<Request> = desk.waiting(NOW).into_iter().cloned().collect();
        console.update(&list, NOW);
        assert!(console.prompt().is_some());
        let out = console.update(&[], NOW);
        assert!(out[0].contains("closed"), "{out:?}");
        assert_eq!(console.prompt(), None);
        assert!(console.answer("late").is_none(), "nothing is being asked");
        // Text where options exist is a custom answer.
        let (mut desk, _) = desk_with_question();
        let mut console = Console::default();
        let list: Vec<Request> = desk.waiting(NOW).into_iter().cloned().collect();
        console.update(&list, NOW);
        let (_, params) = console.answer("green").unwrap();
        assert_eq!(params["answers"]["color"], "green");
        let _ = &mut desk;
    }
}
