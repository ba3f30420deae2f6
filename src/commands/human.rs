//! Human in the loop: `request_human_input`, `ask_user`, `submit_human_input`,
//! `get_human_input`, over the pure state machine of `src/human.rs` kept by the engine.
//!
//! `ask_user`, `submit_human_input` and `get_human_input` do not take the task's lane (see
//! `executor::LANE_FREE`): a long-poll never holds up the submit that ends it. The hosts
//! (`run`, `repl`, `watch`) show every waiting request on the terminal and submit what the person
//! types through `submit_human_input`, like any other caller.

use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::browser::task::TaskId;
use crate::clock::epoch_ms;
use crate::command::*;
use crate::error::CommandError;
use crate::human::{self, NewRequest, Origin, Refusal, Request, Status, StepSpec, Submission};
use crate::js;
use crate::protocol::{ErrorCode, Params};

/// The longest lifetime of a request (7 days): a deadline further away is a mistake (seconds
/// sent as milliseconds), not a wish.
const MAX_LIFETIME_S: f64 = 604_800.0;
/// The latest absolute deadline: 9999-12-31, the end of what a Date shows.
const MAX_EPOCH_MS: f64 = 253_402_300_799_999.0;
/// The longest long-poll: under the long-command bound (PROTOCOL.md §4.2, 900 s).
const MAX_POLL_S: f64 = 899.0;

const TIMEOUT: ParamSpec = int(
    "timeoutSeconds",
    "relative lifetime (legacy name), at most 7 days",
)
.or("300")
.range(f64::NEG_INFINITY, MAX_LIFETIME_S);
const EXPIRES_IN: ParamSpec = int(
    "expiresInSeconds",
    "relative lifetime; same meaning as timeoutSeconds, wins over it",
)
.range(f64::NEG_INFINITY, MAX_LIFETIME_S);
const EXPIRES_AT: ParamSpec = int("expiresAt", "absolute expiry epoch ms; wins over both")
    .range(f64::NEG_INFINITY, MAX_EPOCH_MS);

/// The human group.
pub const SPECS: &[CommandSpec] = &[
    Group::Human
        .action("request_human_input", request_human_input)
        .summary("Ask a person to act in the page (log in, solve a captcha); answers a request id")
        .doc("Opens a request (pending until answered or expired) with a prompt or a checklist of \
              steps s1..sN, brings the tab to the front and, with index/selector, attaches an \
              image of the element. Returns at once: wait with get_human_input. The host shows \
              it on its terminal; anyone may answer with submit_human_input. A person acting in \
              the browser does not answer it: verify the page.")
        .params(&[
            string("prompt", "what the human must do; may be empty string; required when steps absent"),
            array("steps", "checklist [{prompt, index?, selector?, frame?}] -> step ids s1..sN"),
            int("index", "element index from the latest snapshot (its image is attached)").range(0.0, f64::INFINITY),
            string("selector", "CSS selector of the element to attach (no snapshot needed)"),
            string("frame", "frame for selector: ordinal (0 = main) or a substring of its URL or name"),
            TIMEOUT,
            EXPIRES_IN,
            EXPIRES_AT,
            boolean("ocr", "OCR the captured image with Tesseract: ocrText, or ocrError").or("false"),
            string("ocrLanguage", "OCR language").or("\"zh-Hans-CN\""),
            boolean("inline", "include imageBase64 in the response").or("true"),
        ])
        .example("local r = page:request_human_input{ prompt = \"Please log in\" }:unwrap()")
        .no_capture()
        .long()
        .opens(Opens::HumanRequest),
    Group::Human
        .read("ask_user", ask_user)
        .summary("Ask a person for values or choices (a code, pick one); answers a request id")
        .doc("Each question {id, question, header?, options?, multiSelect?} becomes a step whose \
              id is the question's. Does not touch the page or steal focus. Wait with \
              get_human_input, which adds answers [{id, selected[], custom?}].")
        .params(&[
            array("questions", "[{id, question, header?, options? [string | {label, description?}], multiSelect?}]").req(),
            int("timeoutSeconds", "relative lifetime, at most 7 days").or("300").range(f64::NEG_INFINITY, MAX_LIFETIME_S),
            int("expiresInSeconds", "relative lifetime, wins over timeoutSeconds").range(f64::NEG_INFINITY, MAX_LIFETIME_S),
            int("expiresAt", "absolute epoch ms, wins over both").range(f64::NEG_INFINITY, MAX_EPOCH_MS),
        ])
        .example("local q = page:ask_user{ questions = { { id = \"code\", question = \"SMS code?\" } } }")
        .retry_safe(false)
        .long()
        .lane_free()
        .opens(Opens::HumanRequest),
    Group::Human
        .read("submit_human_input", submit_human_input)
        .summary("Answer a human-input request (a single answer, one step, or {stepId: value})")
        .doc("Single-step requests take answer (\"\" allowed); step requests take stepId + answer \
              or answers {stepId: value} (arrays for multi-select). A bare answer on a step \
              request fails and lists the pending steps; unknown step ids fail and are listed \
              (known ones in the same call are kept). Expiry is not checked.")
        .params(&[
            string("requestId", "request id").req(),
            string("answer", "single-step answer; empty string allowed"),
            string("stepId", "step to fill (with answer)"),
            object("answers", "{stepId: value}; values kept as given (arrays for multi-select)"),
        ])
        .example("page:submit_human_input{ requestId = id, answer = \"done\" }")
        .retry_safe(false)
        .long()
        .lane_free(),
    Group::Human
        .read("get_human_input", get_human_input)
        .summary("Read a human-input request; with timeoutSeconds, wait while it is pending")
        .doc("status is pending, partial, answered or expired (computed when read). With \
              timeoutSeconds > 0 it returns as soon as the status leaves pending (an answer \
              lands, or the deadline passes), else when the time is up — not a failure.")
        .params(&[
            string("requestId", "request id").req(),
            int("timeoutSeconds", "long-poll while pending, at most 899; absent/<=0 = return immediately").range(f64::NEG_INFINITY, MAX_POLL_S),
        ])
        .example("local r = page:get_human_input{ requestId = id, timeoutSeconds = 60 }:unwrap()")
        .retry_safe(false)
        .long()
        .lane_free(),
];

/// A request as the commands answer it, read at `now`.
pub fn request_json(r: &Request, now: u64) -> Value {
    let status = r.status(now);
    let mut data = Map::new();
    data.insert("requestId".into(), json!(r.id));
    data.insert("status".into(), json!(status.as_str()));
    data.insert("prompt".into(), json!(r.prompt));
    data.insert("expiresAt".into(), json!(r.expires_at));
    data.insert("expiresInSeconds".into(), json!(r.seconds_left(now)));
    data.insert("answer".into(), r.answer.clone().unwrap_or(Value::Null));
    if !r.steps.is_empty() {
        data.insert("steps".into(), json!(r.steps_json()));
        data.insert("stepCount".into(), json!(r.steps.len()));
        let pending = r.pending_json();
        if !pending.is_empty() {
            data.insert("pendingSteps".into(), json!(pending));
        }
    }
    if r.origin == Origin::Question {
        data.insert("answers".into(), json!(r.answers()));
        data.insert(
            "questionIds".into(),
            json!(r.steps.iter().map(|s| s.id.clone()).collect::<Vec<_>>()),
        );
    }
    if status == Status::Expired {
        data.insert("expired".into(), json!(true));
        data.insert(
            "hint".into(),
            json!("the request expired unanswered; an expired request never means the step was done: read the page, then ask again if needed"),
        );
    }
    Value::Object(data)
}

/// A refused submission or lookup: a failure of the command (it ran: an `UnknownSteps` refusal
/// has recorded the known steps already), with what the caller needs to fix it.
fn refusal(r: Refusal) -> CommandError {
    let msg = r.to_string();
    match r {
        // The caller named a request that does not exist (or no longer does): a not-found, not
        // a refusal of the page, so a script can tell "wrong id" from "the answer was refused".
        Refusal::UnknownRequest { id } => {
            CommandError::new(ErrorCode::NotFound, msg).with_details(json!({"requestId": id}))
        }
        Refusal::StepsExpected { pending } => CommandError::failed(msg).with_details(
            json!({"pendingSteps": pending.iter().map(|(id, p)| json!({"stepId": id, "prompt": p})).collect::<Vec<_>>()}),
        ),
        Refusal::UnknownSteps { unknown, known } => CommandError::failed(msg)
            .with_details(json!({"unknownSteps": unknown, "steps": known})),
        Refusal::AnswerMissing => CommandError::failed(msg),
    }
}

/// The deadline params, read before anything runs: answers the deadline for a given `now`.
fn read_deadline(p: &mut Params) -> Result<impl Fn(u64) -> u64 + Send + 'static, CommandError> {
    let at = p.int_opt("expiresAt")?;
    let within = p.int_opt("expiresInSeconds")?;
    let timeout = p.int_opt("timeoutSeconds")?;
    Ok(move |now| human::deadline(now, at, within, timeout))
}

fn task_of(cx: &TaskCx) -> Result<TaskId, CommandError> {
    Ok(cx.task.id)
}

/// A step of `request_human_input`'s checklist: `(prompt, extra)`.
fn read_steps(raw: Vec<Value>) -> Result<Vec<StepSpec>, CommandError> {
    raw.into_iter()
        .enumerate()
        .map(|(i, step)| {
            let Value::Object(mut m) = step else {
                return Err(CommandError::invalid(
                    "steps",
                    format!("param `steps`: item {} is not an object {{prompt, index?, selector?, frame?}}", i + 1),
                ));
            };
            let prompt = match m.remove("prompt") {
                Some(Value::String(s)) => s,
                _ => {
                    return Err(CommandError::invalid(
                        "steps",
                        format!("param `steps`: item {} has no `prompt` string", i + 1),
                    ))
                }
            };
            m.retain(|k, _| matches!(k.as_str(), "index" | "selector" | "frame"));
            Ok((None, prompt, m))
        })
        .collect()
}

/// The reply of `element_rect.js`: the element's box `[x, y, width, height]` in its frame.
#[derive(serde::Deserialize)]
struct ElementRect {
    rect: [f64; 4],
}

/// An element image for a request: `(png, size, target)` of `index` or `selector` in `frame`.
async fn element_image(
    cx: &TaskCx,
    index: Option<i64>,
    selector: Option<String>,
    frame: Option<String>,
) -> Result<(Vec<u8>, Value, Value), CommandError> {
    let task = cx.task.clone();
    let (tab, rect, target) = if let Some(index) = index {
        let index = u32::try_from(index).map_err(|_| {
            CommandError::invalid("index", format!("param `index`: must be >= 0, got {index}"))
        })?;
        let (tab, rect) = super::target::element_box(&task, index).await?;
        (tab, rect, json!({"index": index}))
    } else {
        let selector = selector.unwrap_or_default();
        let tab = task.tab()?;
        let frames = tab.frames(true).await?;
        let target_frame = match &frame {
            Some(spec) => super::page_state::find_frame(&tab, spec).await?,
            None => tab.main_frame().await?,
        };
        let found: ElementRect = tab
            .call_probe(
                &target_frame,
                js::ELEMENT_RECT_JS,
                json!({"selector": selector}),
            )
            .await?;
        let (dx, dy) = tab.frame_offset(&frames, &target_frame).await?;
        let rect = super::target::shifted_box(found.rect, (dx, dy)).ok_or_else(|| {
            CommandError::new(
                ErrorCode::ElementHidden,
                format!("the element of `{selector}` has no box to capture"),
            )
        })?;
        (tab, rect, json!({"selector": selector, "frame": frame}))
    };
    let png = tab.screenshot_box(rect).await?;
    let size = json!({"width": rect[2].round(), "height": rect[3].round()});
    Ok((png, size, target))
}

fn request_human_input(p: &mut Params) -> Prepared<TaskCx> {
    let prompt = p.str_keep_empty("prompt")?;
    let steps = p.array_opt("steps")?;
    if prompt.is_none() && steps.is_none() {
        return Err(CommandError::invalid(
            "prompt",
            "missing parameter `prompt` (or `steps`): say what the person must do",
        ));
    }
    let steps = read_steps(steps.unwrap_or_default())?;
    let index = p.int_opt("index")?;
    let selector = p.str_opt("selector")?;
    let frame = p.str_opt("frame")?;
    let deadline = read_deadline(p)?;
    let ocr = p.bool_or("ocr", false)?;
    let ocr_language = p
        .str_opt("ocrLanguage")?
        .unwrap_or_else(|| "zh-Hans-CN".into());
    if ocr {
        super::capture::tesseract_language(&ocr_language).map_err(|e| {
            CommandError::invalid(
                "ocrLanguage",
                format!("param `ocrLanguage`: {e}; use zh-Hans-CN, en-US or a Tesseract name"),
            )
        })?;
    }
    let inline = p.bool_or("inline", true)?;
    run(move |cx: TaskCx| async move {
        let prompt = prompt.unwrap_or_default();
        if prompt.trim().is_empty() && steps.is_empty() {
            return Err(CommandError::failed(
                "request_human_input: the prompt is blank and there are no steps: nothing to ask",
            ));
        }
        let task = cx.task.clone();
        let tab = task.tab()?;
        let url = tab.url().await.unwrap_or_default();
        // The element to show: the request's own, else the first step that names one.
        let (index, selector, frame) = if index.is_some() || selector.is_some() {
            (index, selector, frame)
        } else {
            steps
                .iter()
                .find(|(_, _, extra)| extra.contains_key("index") || extra.contains_key("selector"))
                .map(|(_, _, extra)| {
                    (
                        extra.get("index").and_then(Value::as_i64),
                        extra
                            .get("selector")
                            .and_then(Value::as_str)
                            .map(str::to_string),
                        extra.get("frame").map(|f| match f {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        }),
                    )
                })
                .unwrap_or((None, None, frame))
        };
        let now = epoch_ms();
        let expires_at = deadline(now);
        let new = NewRequest {
            task: task.id.0,
            prompt,
            steps,
            expires_at,
        };
        let data = cx.engine.with_desk(|desk| {
            let r = desk.open(Origin::Action, new, TaskId::generate().0, now);
            request_json(r, now)
        });
        let mut data = match data {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        data.insert("url".into(), json!(url));
        if data.get("status") == Some(&json!("expired")) {
            data.insert(
                "note".into(),
                json!("the deadline was already past: the request was created expired"),
            );
        }
        // Bring the tab to the front (the person has to see it).
        let _ = tab.bring_to_front().await;
        if index.is_some() || selector.is_some() {
            match element_image(&cx, index, selector, frame).await {
                Ok((png, size, target)) => {
                    let request_id = data["requestId"].as_str().unwrap_or("request").to_string();
                    match super::page_state::write_data_file(
                        &cx,
                        &task,
                        &format!("{request_id}.png"),
                        &png,
                    )
                    .await
                    {
                        Ok(path) => {
                            cx.engine
                                .with_desk(|d| d.set_image(&request_id, path.clone()));
                            let url = super::capture::data_url(
                                &cx.engine,
                                &task,
                                std::path::Path::new(&path),
                            )
                            .await;
                            if let Some(url) = url {
                                data.insert("imageUrl".into(), json!(url));
                            }
                            data.insert("imagePath".into(), json!(path));
                        }
                        Err(e) => {
                            data.insert(
                                "imageError".into(),
                                json!(format!("cannot save the image: {e}")),
                            );
                        }
                    }
                    data.insert("imageSize".into(), size);
                    data.insert("imageTarget".into(), target);
                    if inline {
                        data.insert(
                            "imageBase64".into(),
                            json!(crate::encoding::encode_base64(&png)),
                        );
                    } else {
                        data.insert("base64Omitted".into(), json!(true));
                        data.insert(
                            "imageNote".into(),
                            json!("inline:false — read the image from imagePath"),
                        );
                    }
                }
                Err(e) => {
                    data.insert("imageError".into(), json!(e.msg));
                }
            }
        }
        if ocr {
            data.insert("ocr".into(), json!(true));
            match data.get("imagePath").and_then(Value::as_str) {
                Some(path) => {
                    let read =
                        super::capture::ocr_file(std::path::Path::new(path), &ocr_language).await;
                    if read["ok"] == true {
                        data.insert("ocrText".into(), read["text"].clone());
                    } else {
                        data.insert("ocrError".into(), read["error"].clone());
                        if read["engineMissing"] == true {
                            data.insert("ocrEngineMissing".into(), json!(true));
                        }
                    }
                }
                None => {
                    data.insert(
                        "ocrError".into(),
                        json!("no image to OCR (give index or selector)"),
                    );
                }
            }
        }
        Ok(Value::Object(data))
    })
}

/// `ask_user`'s questions as steps (the question's id is the step's), or why they are not.
fn read_questions(questions: &[Value]) -> Result<Vec<StepSpec>, CommandError> {
    if questions.is_empty() {
        return Err(CommandError::invalid(
            "questions",
            "param `questions`: empty: give at least one {id, question}",
        ));
    }
    let mut steps: Vec<StepSpec> = Vec::with_capacity(questions.len());
    for (i, q) in questions.iter().enumerate() {
        let id = q.get("id").and_then(|v| match v {
            Value::String(s) if !s.is_empty() => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        });
        let question = q
            .get("question")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let (Some(id), Some(question)) = (id, question) else {
            return Err(CommandError::invalid(
                "questions",
                format!(
                    "param `questions`: question {} needs an `id` and a `question`",
                    i + 1
                ),
            ));
        };
        if steps
            .iter()
            .any(|(seen, _, _)| seen.as_deref() == Some(id.as_str()))
        {
            return Err(CommandError::invalid(
                "questions",
                format!(
                    "param `questions`: question {} repeats the id `{id}`: ids must be unique",
                    i + 1
                ),
            ));
        }
        let mut extra = Map::new();
        for key in ["header", "options", "multiSelect"] {
            if let Some(v) = q.get(key) {
                extra.insert(key.to_string(), v.clone());
            }
        }
        steps.push((Some(id), question.to_string(), extra));
    }
    Ok(steps)
}

fn ask_user(p: &mut Params) -> Prepared<TaskCx> {
    let questions = p
        .array_opt("questions")?
        .ok_or_else(|| CommandError::invalid("questions", "missing parameter `questions`"))?;
    let deadline = read_deadline(p)?;
    // The questions are the params: a malformed list is refused before anything opens
    // (`INVALID_ARGUMENT`, `started:false`).
    let steps = read_questions(&questions)?;
    let ids: Vec<String> = steps.iter().filter_map(|(id, _, _)| id.clone()).collect();
    run(move |cx: TaskCx| async move {
        let now = epoch_ms();
        let new = NewRequest {
            task: task_of(&cx)?.0,
            prompt: format!("please answer {} questions: {}", ids.len(), ids.join(" / ")),
            steps,
            expires_at: deadline(now),
        };
        let mut data = cx.engine.with_desk(|desk| {
            let r = desk.open(Origin::Question, new, TaskId::generate().0, now);
            request_json(r, now)
        });
        data["questions"] = Value::Array(questions);
        if data["status"] == "expired" {
            data["note"] = json!("the deadline was already past: the request was created expired");
        }
        Ok(data)
    })
}

fn submit_human_input(p: &mut Params) -> Prepared<TaskCx> {
    let id = p.str_req("requestId")?;
    let answer = p.str_keep_empty("answer")?;
    let step_id = p.str_opt("stepId")?;
    let answers = p.object_opt("answers")?;
    run(move |cx: TaskCx| async move {
        task_of(&cx)?;
        let now = epoch_ms();
        let sub = Submission {
            answer: answer.map(Value::String),
            step_id,
            answers,
        };
        cx.engine.with_desk(|desk| {
            let r = desk.submit(&id, sub, now).map_err(refusal)?;
            let mut data = request_json(r, now);
            if data["status"] == "partial" {
                data["note"] =
                    json!("steps are still pending: answer them with stepId + answer or answers");
            }
            Ok(data)
        })
    })
}

fn get_human_input(p: &mut Params) -> Prepared<TaskCx> {
    let id = p.str_req("requestId")?;
    let wait = p.int_opt("timeoutSeconds")?.filter(|s| *s > 0);
    run(move |cx: TaskCx| async move {
        task_of(&cx)?;
        let mut changes = cx.engine.desk_changes();
        // A poll that runs out answers the status; keep it inside the command's own bound.
        let cap = cx
            .engine
            .config
            .long_command_timeout
            .saturating_sub(Duration::from_secs(1));
        let until = wait
            .map(|s| tokio::time::Instant::now() + Duration::from_secs(s.unsigned_abs()).min(cap));
        loop {
            let now = epoch_ms();
            let (data, status, expires_at) = cx.engine.with_desk(|desk| {
                desk.get(&id)
                    .map(|r| (request_json(r, now), r.status(now), r.expires_at))
                    .map_err(refusal)
            })?;
            let Some(until) = until.filter(|_| status == Status::Pending) else {
                return Ok(data);
            };
            // Wake on any change of the desk, at the request's deadline, or when the poll ends.
            let to_expiry = Duration::from_millis(expires_at.saturating_sub(now).saturating_add(1));
            let wake = until.min(tokio::time::Instant::now() + to_expiry);
            tokio::select! {
                changed = changes.changed() => {
                    if changed.is_err() {
                        return Ok(data);
                    }
                }
                _ = tokio::time::sleep_until(wake) => {
                    if tokio::time::Instant::now() >= until {
                        let now = epoch_ms();
                        return cx.engine.with_desk(|desk| {
                            desk.get(&id).map(|r| request_json(r, now)).map_err(refusal)
                        });
                    }
                }
            }
        }
    })
}
