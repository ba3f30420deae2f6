//! The human-in-the-loop state machine: requests a script (or an agent) opens for a person, and
//! the answers that close them. Pure: no tokio, no browser; the time is passed in (epoch ms).
//!
//! ```text
//! created ---------------------------------------> pending
//! pending + some steps answered -----------------> partial   (computed when read)
//! all steps answered / single answer submitted --> answered
//! pending or partial, and now > expiresAt -------> expired   (computed when read)
//! deadline already past at creation -------------> expired   (stored)
//! ```
//!
//! A request is either single-step (one `answer`) or made of steps (`request_human_input`'s
//! checklist, or `ask_user`'s questions, whose ids become step ids) answered one by one.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

/// The default lifetime of a request.
pub const DEFAULT_LIFETIME_S: i64 = 300;

/// Which command opened a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// `request_human_input` (ids `hr-…`): do something in the page.
    Action,
    /// `ask_user` (ids `aq-…`): give a value or pick an option.
    Question,
}

/// A request's status as read now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Nothing answered yet.
    Pending,
    /// Some steps answered, some not.
    Partial,
    /// Every step (or the single answer) is in.
    Answered,
    /// The deadline passed before it was answered.
    Expired,
}

impl Status {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Partial => "partial",
            Status::Answered => "answered",
            Status::Expired => "expired",
        }
    }
}

/// One step of a request.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// `s1`, `s2`… or the question's id.
    pub id: String,
    /// What to do, or the question.
    pub prompt: String,
    /// The answer, as given (a string, or an array for multi-select).
    pub answer: Option<Value>,
    /// When it was answered (epoch ms).
    pub answered_at: Option<u64>,
    /// The step's other fields, echoed (`index`/`selector`/`frame`, or `header`/`options`/
    /// `multiSelect`).
    pub extra: Map<String, Value>,
}

/// One request.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// `hr-<seq>-<snowflake>` or `aq-<seq>-<snowflake>`.
    pub id: String,
    /// Which command opened it.
    pub origin: Origin,
    /// The task it belongs to.
    pub task: u64,
    /// What the person is asked.
    pub prompt: String,
    /// The steps; empty for a single-step request.
    pub steps: Vec<Step>,
    /// A single-step request's answer.
    pub answer: Option<Value>,
    /// When it was created and when it expires (epoch ms).
    pub created_at: u64,
    /// The deadline (epoch ms).
    pub expires_at: u64,
    /// Created with its deadline already past.
    pub born_expired: bool,
    /// The element image attached to it, if any.
    pub image_path: Option<String>,
    /// Opening order (ties of `created_at`).
    pub seq: u64,
    /// Withdrawn before it was answered (its task closed, or the watch run that opened it
    /// was aborted): reads as expired.
    pub withdrawn: bool,
}

impl Request {
    /// Whether every step (or the single answer) is in.
    pub fn complete(&self) -> bool {
        if self.steps.is_empty() {
            self.answer.is_some()
        } else {
            self.steps.iter().all(|s| s.answer.is_some())
        }
    }

    /// The status at `now`.
    pub fn status(&self, now: u64) -> Status {
        if self.complete() {
            return Status::Answered;
        }
        if self.born_expired || self.withdrawn || now > self.expires_at {
            return Status::Expired;
        }
        if self.steps.iter().any(|s| s.answer.is_some()) {
            Status::Partial
        } else {
            Status::Pending
        }
    }

    /// The steps still open.
    pub fn pending_steps(&self) -> Vec<&Step> {
        self.steps.iter().filter(|s| s.answer.is_none()).collect()
    }

    /// Whole seconds left at `now` (0 once past).
    pub fn seconds_left(&self, now: u64) -> u64 {
        self.expires_at.saturating_sub(now) / 1000
    }

    /// `ask_user`'s answers: `[{id, selected[], custom?}]` in question order.
    pub fn answers(&self) -> Vec<Value> {
        self.steps
            .iter()
            .map(|step| {
                let labels: Vec<String> = step
                    .extra
                    .get("options")
                    .and_then(Value::as_array)
                    .map(|opts| opts.iter().filter_map(option_label).collect())
                    .unwrap_or_default();
                match &step.answer {
                    None => json!({"id": step.id, "selected": []}),
                    Some(Value::Array(items)) => json!({"id": step.id, "selected": items}),
                    // An empty Lua table arrives as `{}`: an empty multi-select.
                    Some(Value::Object(o)) if o.is_empty() => {
                        json!({"id": step.id, "selected": []})
                    }
                    Some(Value::String(s)) if labels.iter().any(|l| l == s) => {
                        json!({"id": step.id, "selected": [s]})
                    }
                    Some(Value::String(s)) => json!({"id": step.id, "selected": [], "custom": s}),
                    Some(other) => json!({"id": step.id, "selected": [], "custom": other}),
                }
            })
            .collect()
    }

    /// The steps as JSON.
    pub fn steps_json(&self) -> Vec<Value> {
        self.steps
            .iter()
            .map(|s| {
                let mut item = Map::new();
                item.insert("stepId".into(), json!(s.id));
                item.insert("prompt".into(), json!(s.prompt));
                item.insert(
                    "status".into(),
                    json!(if s.answer.is_some() {
                        "answered"
                    } else {
                        "pending"
                    }),
                );
                item.insert("answer".into(), s.answer.clone().unwrap_or(Value::Null));
                if let Some(at) = s.answered_at {
                    item.insert("answeredAt".into(), json!(at));
                }
                for (k, v) in &s.extra {
                    item.insert(k.clone(), v.clone());
                }
                Value::Object(item)
            })
            .collect()
    }

    /// The pending steps as `[{stepId, prompt}]`.
    pub fn pending_json(&self) -> Vec<Value> {
        self.pending_steps()
            .iter()
            .map(|s| json!({"stepId": s.id, "prompt": s.prompt}))
            .collect()
    }
}

/// The label of an option: a string, or `{label, description?}`.
pub fn option_label(option: &Value) -> Option<String> {
    match option {
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => o.get("label").and_then(Value::as_str).map(str::to_string),
        _ => None,
    }
}

/// The deadline (epoch ms) by precedence: `expiresAt` (absolute, if > 0) > `expiresInSeconds`
/// (if > 0) > `timeoutSeconds` (if > 0) > 300 s.
pub fn deadline(
    now: u64,
    expires_at: Option<i64>,
    expires_in_seconds: Option<i64>,
    timeout_seconds: Option<i64>,
) -> u64 {
    if let Some(at) = expires_at.filter(|a| *a > 0) {
        return at.unsigned_abs();
    }
    let seconds = [expires_in_seconds, timeout_seconds]
        .into_iter()
        .flatten()
        .find(|s| *s > 0)
        .unwrap_or(DEFAULT_LIFETIME_S);
    now.saturating_add(seconds.unsigned_abs().saturating_mul(1000))
}

/// A step as opened: its id (given for questions, `s1…` otherwise), prompt and other fields.
pub type StepSpec = (Option<String>, String, Map<String, Value>);

/// What a request is opened with.
#[derive(Debug, Clone, Default)]
pub struct NewRequest {
    /// The task it belongs to.
    pub task: u64,
    /// What the person is asked (may be empty when there are steps).
    pub prompt: String,
    /// `(id, prompt, extra)` per step; ids are given for questions, `s1…` otherwise.
    pub steps: Vec<StepSpec>,
    /// The deadline (see [`deadline`]).
    pub expires_at: u64,
}

/// An answer being submitted.
#[derive(Debug, Clone, Default)]
pub struct Submission {
    /// A single-step answer, or with `step_id` one step's.
    pub answer: Option<Value>,
    /// The step `answer` is for.
    pub step_id: Option<String>,
    /// `{stepId: value}`.
    pub answers: Option<Map<String, Value>>,
}

/// Why a submission (or a lookup) was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// No request has this id.
    UnknownRequest {
        /// The id asked for.
        id: String,
    },
    /// A step request got no step (a bare `answer`, or nothing).
    StepsExpected {
        /// `(stepId, prompt)` still open.
        pending: Vec<(String, String)>,
    },
    /// Some step ids do not exist (the known ones in the same call were recorded).
    UnknownSteps {
        /// The unknown ids.
        unknown: Vec<String>,
        /// The request's step ids.
        known: Vec<String>,
    },
    /// A single-step request (or a `stepId`) came without `answer`.
    AnswerMissing,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::UnknownRequest { id } => write!(f, "no human-input request `{id}`"),
            Refusal::StepsExpected { pending } => {
                let list: Vec<String> = pending
                    .iter()
                    .map(|(id, p)| format!("{id} ({p})"))
                    .collect();
                write!(
                    f,
                    "this request has steps: answer with stepId + answer, or answers {{stepId: value}}; pending: {}",
                    if list.is_empty() { "none".to_string() } else { list.join(", ") }
                )
            }
            Refusal::UnknownSteps { unknown, known } => write!(
                f,
                "unknown step id(s): {} (steps: {}); the known ones in this call were recorded",
                unknown.join(", "),
                known.join(", ")
            ),
            Refusal::AnswerMissing => write!(f, "missing `answer` (an empty string is allowed)"),
        }
    }
}

/// Every request of an engine, by id.
#[derive(Debug, Default)]
pub struct Desk {
    requests: BTreeMap<String, Request>,
    seq: u64,
    /// Bumped on every change, for waiters and hosts.
    pub version: u64,
}

impl Desk {
    /// Opens a request; `snowflake` makes its id unique across engines.
    pub fn open(&mut self, origin: Origin, new: NewRequest, snowflake: u64, now: u64) -> &Request {
        self.seq += 1;
        self.version += 1;
        let prefix = match origin {
            Origin::Action => "hr",
            Origin::Question => "aq",
        };
        let id = format!("{prefix}-{}-{snowflake}", self.seq);
        let steps = new
            .steps
            .into_iter()
            .enumerate()
            .map(|(i, (id, prompt, extra))| Step {
                id: id.unwrap_or_else(|| format!("s{}", i + 1)),
                prompt,
                answer: None,
                answered_at: None,
                extra,
            })
            .collect();
        let request = Request {
            id: id.clone(),
            origin,
            task: new.task,
            prompt: new.prompt,
            steps,
            answer: None,
            created_at: now,
            expires_at: new.expires_at,
            born_expired: new.expires_at < now,
            image_path: None,
            seq: self.seq,
            withdrawn: false,
        };
        self.requests.entry(id).or_insert(request)
    }

    /// Attaches the element image saved for a request.
    pub fn set_image(&mut self, id: &str, path: String) {
        if let Some(r) = self.requests.get_mut(id) {
            r.image_path = Some(path);
            self.version += 1;
        }
    }

    /// Withdraws a request that is still waiting (it then reads as expired).
    pub fn withdraw(&mut self, id: &str) {
        if let Some(r) = self.requests.get_mut(id) {
            if !r.complete() && !r.withdrawn {
                r.withdrawn = true;
                self.version += 1;
            }
        }
    }

    /// Withdraws the waiting requests of a task that closed.
    pub fn close_task(&mut self, task: u64) {
        let ids: Vec<String> = self
            .requests
            .values()
            .filter(|r| r.task == task)
            .map(|r| r.id.clone())
            .collect();
        for id in ids {
            self.withdraw(&id);
        }
    }

    /// A request by id.
    pub fn get(&self, id: &str) -> Result<&Request, Refusal> {
        self.requests
            .get(id)
            .ok_or_else(|| Refusal::UnknownRequest { id: id.to_string() })
    }

    /// Records an answer. Expiry is not checked (a late answer is still kept). On
    /// `UnknownSteps` the known steps of the same call are recorded all the same.
    pub fn submit(&mut self, id: &str, sub: Submission, now: u64) -> Result<&Request, Refusal> {
        let request = self
            .requests
            .get_mut(id)
            .ok_or_else(|| Refusal::UnknownRequest { id: id.to_string() })?;
        if request.steps.is_empty() {
            let answer = sub
                .answer
                .or_else(|| {
                    // `answers` with one value is accepted for a single-step request too.
                    sub.answers
                        .as_ref()
                        .filter(|a| a.len() == 1)
                        .and_then(|a| a.values().next().cloned())
                })
                .ok_or(Refusal::AnswerMissing)?;
            request.answer = Some(answer);
            self.version += 1;
            return Ok(request);
        }
        let mut given: Vec<(String, Value)> = Vec::new();
        if let Some(answers) = sub.answers {
            given.extend(answers);
        }
        if let Some(step) = sub.step_id {
            let answer = sub.answer.ok_or(Refusal::AnswerMissing)?;
            given.push((step, answer));
        } else if given.is_empty() {
            return Err(Refusal::StepsExpected {
                pending: request
                    .pending_steps()
                    .iter()
                    .map(|s| (s.id.clone(), s.prompt.clone()))
                    .collect(),
            });
        }
        let mut unknown = Vec::new();
        for (step_id, value) in given {
            match request.steps.iter_mut().find(|s| s.id == step_id) {
                Some(step) => {
                    step.answer = Some(value);
                    step.answered_at = Some(now);
                }
                None => unknown.push(step_id),
            }
        }
        self.version += 1;
        if !unknown.is_empty() {
            return Err(Refusal::UnknownSteps {
                unknown,
                known: request.steps.iter().map(|s| s.id.clone()).collect(),
            });
        }
        Ok(request)
    }

    /// The requests still waiting for a person at `now` (pending or partial), oldest first.
    pub fn waiting(&self, now: u64) -> Vec<&Request> {
        let mut list: Vec<&Request> = self
            .requests
            .values()
            .filter(|r| matches!(r.status(now), Status::Pending | Status::Partial))
            .collect();
        list.sort_by_key(|r| (r.created_at, r.seq));
        list
    }

    /// The earliest deadline among waiting requests (when a status changes without a call).
    pub fn next_expiry(&self, now: u64) -> Option<u64> {
        self.waiting(now).iter().map(|r| r.expires_at).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_800_000_000_000;

    fn single(desk: &mut Desk, expires_at: u64) -> String {
        let new = NewRequest {
            task: 1,
            prompt: "log in".into(),
            steps: vec![],
            expires_at,
        };
        desk.open(Origin::Action, new, 42, NOW).id.clone()
    }

    fn stepped(desk: &mut Desk) -> String {
        let steps = vec![
            (None, "solve the captcha".into(), Map::new()),
            (None, "press continue".into(), Map::new()),
        ];
        let new = NewRequest {
            task: 1,
            prompt: "two things".into(),
            steps,
            expires_at: NOW + 60_000,
        };
        desk.open(Origin::Action, new, 42, NOW).id.clone()
    }

    fn question(desk: &mut Desk) -> String {
        let opts = |o: Value| {
            let mut m = Map::new();
            m.insert("options".into(), o);
            m
        };
        let steps = vec![
            (
                Some("color".into()),
                "Color?".into(),
                opts(json!(["red", {"label": "blue"}])),
            ),
            (
                Some("tags".into()),
                "Tags?".into(),
                opts(json!(["a", "b", "c"])),
            ),
            (Some("code".into()), "Code?".into(), Map::new()),
            (Some("note".into()), "Note?".into(), opts(json!(["x"]))),
        ];
        let new = NewRequest {
            task: 1,
            prompt: "please answer 4 questions".into(),
            steps,
            expires_at: NOW + 60_000,
        };
        desk.open(Origin::Question, new, 7, NOW).id.clone()
    }

    fn sub(answer: Option<&str>, step: Option<&str>, answers: Option<Value>) -> Submission {
        Submission {
            answer: answer.map(|a| json!(a)),
            step_id: step.map(str::to_string),
            answers: answers.and_then(|a| a.as_object().cloned()),
        }
    }

    /// Every transition and every refusal, as one table: a request (single or two steps,
    /// deadline `NOW + 1000` or already past), submissions in order, and the status read at a
    /// time; each submission's outcome is checked too.
    #[test]
    fn transition_table() {
        type Sub = (Option<&'static str>, Option<&'static str>, Option<Value>);
        struct Case {
            name: &'static str,
            steps: bool,
            born_expired: bool,
            subs: Vec<(Sub, Result<(), &'static str>)>,
            read_at: u64,
            status: Status,
        }
        let ok = Ok(());
        let cases = vec![
            Case {
                name: "created -> pending",
                steps: false,
                born_expired: false,
                subs: vec![],
                read_at: NOW,
                status: Status::Pending,
            },
            Case {
                name: "pending -> answered",
                steps: false,
                born_expired: false,
                subs: vec![((Some("x"), None, None), ok)],
                read_at: NOW,
                status: Status::Answered,
            },
            Case {
                name: "pending -> expired (time)",
                steps: false,
                born_expired: false,
                subs: vec![],
                read_at: NOW + 1001,
                status: Status::Expired,
            },
            Case {
                name: "created expired",
                steps: false,
                born_expired: true,
                subs: vec![],
                read_at: NOW,
                status: Status::Expired,
            },
            Case {
                name: "expired, then a late answer -> answered",
                steps: false,
                born_expired: true,
                subs: vec![((Some("x"), None, None), ok)],
                read_at: NOW + 5000,
                status: Status::Answered,
            },
            Case {
                name: "single without answer: refused",
                steps: false,
                born_expired: false,
                subs: vec![((None, None, None), Err("AnswerMissing"))],
                read_at: NOW,
                status: Status::Pending,
            },
            Case {
                name: "steps: pending -> partial",
                steps: true,
                born_expired: false,
                subs: vec![((Some("a"), Some("s1"), None), ok)],
                read_at: NOW,
                status: Status::Partial,
            },
            Case {
                name: "steps: partial -> expired",
                steps: true,
                born_expired: false,
                subs: vec![((Some("a"), Some("s1"), None), ok)],
                read_at: NOW + 1001,
                status: Status::Expired,
            },
            Case {
                name: "steps: partial -> answered",
                steps: true,
                born_expired: false,
                subs: vec![
                    ((Some("a"), Some("s1"), None), ok),
                    ((None, None, Some(json!({"s2": "b"}))), ok),
                ],
                read_at: NOW,
                status: Status::Answered,
            },
            Case {
                name: "steps: all at once",
                steps: true,
                born_expired: false,
                subs: vec![((None, None, Some(json!({"s1": "a", "s2": ["x", "y"]}))), ok)],
                read_at: NOW,
                status: Status::Answered,
            },
            Case {
                name: "steps: bare answer refused",
                steps: true,
                born_expired: false,
                subs: vec![((Some("a"), None, None), Err("StepsExpected"))],
                read_at: NOW,
                status: Status::Pending,
            },
            Case {
                name: "steps: nothing refused",
                steps: true,
                born_expired: false,
                subs: vec![((None, None, None), Err("StepsExpected"))],
                read_at: NOW,
                status: Status::Pending,
            },
            Case {
                name: "steps: stepId without answer",
                steps: true,
                born_expired: false,
                subs: vec![((None, Some("s1"), None), Err("AnswerMissing"))],
                read_at: NOW,
                status: Status::Pending,
            },
            Case {
                name: "steps: unknown step, known kept",
                steps: true,
                born_expired: false,
                subs: vec![(
                    (None, None, Some(json!({"s1": "a", "nope": 1}))),
                    Err("UnknownSteps"),
                )],
                read_at: NOW,
                status: Status::Partial,
            },
            Case {
                name: "steps: unknown stepId",
                steps: true,
                born_expired: false,
                subs: vec![((Some("a"), Some("s7"), None), Err("UnknownSteps"))],
                read_at: NOW,
                status: Status::Pending,
            },
        ];
        for case in cases {
            let mut desk = Desk::default();
            let steps = if case.steps {
                vec![
                    (None, "one".to_string(), Map::new()),
                    (None, "two".to_string(), Map::new()),
                ]
            } else {
                vec![]
            };
            let expires_at = if case.born_expired {
                NOW - 1
            } else {
                NOW + 1000
            };
            let new = NewRequest {
                task: 1,
                prompt: "p".into(),
                steps,
                expires_at,
            };
            let id = desk.open(Origin::Action, new, 1, NOW).id.clone();
            for ((answer, step, answers), want) in case.subs {
                let got = desk
                    .submit(&id, sub(answer, step, answers), NOW)
                    .map(|_| ())
                    .map_err(|r| match r {
                        Refusal::UnknownRequest { .. } => "UnknownRequest",
                        Refusal::StepsExpected { .. } => "StepsExpected",
                        Refusal::UnknownSteps { .. } => "UnknownSteps",
                        Refusal::AnswerMissing => "AnswerMissing",
                    });
                assert_eq!(got, want, "{}", case.name);
            }
            assert_eq!(
                desk.get(&id).unwrap().status(case.read_at),
                case.status,
                "{}",
                case.name
            );
        }
    }

    #[test]
    fn withdrawn_requests_read_as_expired_and_answered_ones_stay() {
        let mut desk = Desk::default();
        let a = single(&mut desk, NOW + 1000);
        let b = single(&mut desk, NOW + 1000);
        desk.submit(&b, sub(Some("x"), None, None), NOW).unwrap();
        let exactly_now = single(&mut desk, NOW);
        assert_eq!(
            desk.get(&exactly_now).unwrap().status(NOW),
            Status::Pending,
            "not past yet"
        );
        desk.close_task(1);
        assert_eq!(desk.get(&a).unwrap().status(NOW), Status::Expired);
        assert_eq!(desk.get(&b).unwrap().status(NOW), Status::Answered);
        assert!(desk.waiting(NOW).is_empty());
    }

    #[test]
    fn deadline_precedence() {
        assert_eq!(
            deadline(NOW, Some(5), Some(10), Some(20)),
            5,
            "expiresAt wins"
        );
        assert_eq!(deadline(NOW, Some(0), Some(10), Some(20)), NOW + 10_000);
        assert_eq!(deadline(NOW, None, Some(-1), Some(20)), NOW + 20_000);
        assert_eq!(
            deadline(NOW, None, None, Some(0)),
            NOW + 300_000,
            "default 300 s"
        );
        assert_eq!(deadline(NOW, None, None, None), NOW + 300_000);
    }

    #[test]
    fn single_step_pending_answered_and_ids() {
        let mut desk = Desk::default();
        let id = single(&mut desk, NOW + 1000);
        assert!(id.starts_with("hr-1-"), "{id}");
        assert_eq!(desk.get(&id).unwrap().status(NOW), Status::Pending);
        assert_eq!(desk.get(&id).unwrap().seconds_left(NOW), 1);
        // No answer: refused, nothing changes.
        assert_eq!(
            desk.submit(&id, sub(None, None, None), NOW).unwrap_err(),
            Refusal::AnswerMissing
        );
        assert_eq!(desk.get(&id).unwrap().status(NOW), Status::Pending);
        // The empty string is an answer.
        let r = desk.submit(&id, sub(Some(""), None, None), NOW).unwrap();
        assert_eq!(r.status(NOW), Status::Answered);
        // Answered stays answered after the deadline.
        assert_eq!(desk.get(&id).unwrap().status(NOW + 5000), Status::Answered);
        let q = question(&mut desk);
        assert!(q.starts_with("aq-2-7"), "{q}");
    }

    #[test]
    fn expiry_by_time_and_at_creation() {
        let mut desk = Desk::default();
        let id = single(&mut desk, NOW + 1000);
        assert_eq!(
            desk.get(&id).unwrap().status(NOW + 1000),
            Status::Pending,
            "not past yet"
        );
        assert_eq!(desk.get(&id).unwrap().status(NOW + 1001), Status::Expired);
        assert_eq!(desk.get(&id).unwrap().seconds_left(NOW + 2000), 0);
        // A deadline already past: expired at once, whatever the clock says later.
        let past = single(&mut desk, NOW - 1);
        assert_eq!(desk.get(&past).unwrap().status(NOW - 10), Status::Expired);
        // Submitting does not check expiry: a late answer is kept and answers the request.
        let r = desk
            .submit(&id, sub(Some("late"), None, None), NOW + 5000)
            .unwrap();
        assert_eq!(r.status(NOW + 5000), Status::Answered);
    }

    #[test]
    fn steps_go_partial_then_answered_and_refuse_bare_answers() {
        let mut desk = Desk::default();
        let id = stepped(&mut desk);
        let r = desk.get(&id).unwrap();
        assert_eq!(
            r.steps.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(),
            ["s1", "s2"]
        );
        // A bare answer, or nothing: refused with the pending list.
        for bad in [sub(Some("done"), None, None), sub(None, None, None)] {
            match desk.submit(&id, bad, NOW).unwrap_err() {
                Refusal::StepsExpected { pending } => assert_eq!(pending.len(), 2),
                other => panic!("{other:?}"),
            }
        }
        // stepId without answer.
        assert_eq!(
            desk.submit(&id, sub(None, Some("s1"), None), NOW)
                .unwrap_err(),
            Refusal::AnswerMissing
        );
        let r = desk
            .submit(&id, sub(Some("ok"), Some("s1"), None), NOW + 1)
            .unwrap();
        assert_eq!(r.status(NOW + 1), Status::Partial);
        assert_eq!(r.steps[0].answered_at, Some(NOW + 1));
        assert_eq!(
            r.pending_json(),
            vec![json!({"stepId": "s2", "prompt": "press continue"})]
        );
        // Partial expires too.
        assert_eq!(desk.get(&id).unwrap().status(NOW + 60_001), Status::Expired);
        let r = desk
            .submit(
                &id,
                sub(None, None, Some(json!({"s2": "pressed"}))),
                NOW + 2,
            )
            .unwrap();
        assert_eq!(r.status(NOW + 2), Status::Answered);
    }

    #[test]
    fn unknown_ids_fail_clearly_and_known_steps_are_kept() {
        let mut desk = Desk::default();
        assert_eq!(
            desk.submit("hr-9-9", sub(Some("x"), None, None), NOW)
                .unwrap_err(),
            Refusal::UnknownRequest {
                id: "hr-9-9".into()
            }
        );
        assert!(desk.get("nope").is_err());
        let id = stepped(&mut desk);
        let err = desk
            .submit(
                &id,
                sub(None, None, Some(json!({"s1": "a", "zz": "b"}))),
                NOW,
            )
            .unwrap_err();
        assert_eq!(
            err,
            Refusal::UnknownSteps {
                unknown: vec!["zz".into()],
                known: vec!["s1".into(), "s2".into()]
            }
        );
        assert!(err.to_string().contains("zz"));
        assert_eq!(
            desk.get(&id).unwrap().status(NOW),
            Status::Partial,
            "s1 was recorded"
        );
        let err = desk
            .submit(&id, sub(Some("a"), Some("s9"), None), NOW)
            .unwrap_err();
        assert!(matches!(err, Refusal::UnknownSteps { .. }));
    }

    #[test]
    fn ask_user_answers_map_to_selected_or_custom() {
        let mut desk = Desk::default();
        let id = question(&mut desk);
        assert_eq!(desk.get(&id).unwrap().steps[0].id, "color");
        let answers = json!({"color": "blue", "tags": ["a", "c"], "code": "1234"});
        let r = desk
            .submit(&id, sub(None, None, Some(answers)), NOW)
            .unwrap();
        assert_eq!(r.status(NOW), Status::Partial, "note is still open");
        assert_eq!(
            r.answers(),
            vec![
                json!({"id": "color", "selected": ["blue"]}),
                json!({"id": "tags", "selected": ["a", "c"]}),
                json!({"id": "code", "selected": [], "custom": "1234"}),
                json!({"id": "note", "selected": []}),
            ]
        );
    }

    #[test]
    fn waiting_lists_open_requests_and_the_next_expiry() {
        let mut desk = Desk::default();
        let a = single(&mut desk, NOW + 5000);
        let _b = single(&mut desk, NOW + 2000);
        let _gone = single(&mut desk, NOW - 1);
        assert_eq!(desk.waiting(NOW).len(), 2);
        assert_eq!(desk.next_expiry(NOW), Some(NOW + 2000));
        let v = desk.version;
        desk.submit(&a, sub(Some("x"), None, None), NOW).unwrap();
        assert!(desk.version > v, "changes bump the version");
        assert_eq!(desk.waiting(NOW).len(), 1);
        assert_eq!(desk.waiting(NOW + 2001).len(), 0);
    }
}
