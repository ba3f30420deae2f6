//! The trace log (PROTOCOL.md §14, `calls.jsonl`): one JSON line per command —
//! `{seq, ts, durationMs, taskId, method, ok, code, msg, started, retryable, request, result}` —
//! in `<dir>/<yyyymmdd>/calls.jsonl` (UTC date). While a host runs a script as a recorded run
//! (`runs.rs`), its lines also carry `run`, the run's id, so the run's report finds exactly them.
//!
//! Off the hot path: the executor hands the record to a bounded queue (10 000 entries; records
//! are dropped with one warning when it is full) and a writer thread of its own serialises and
//! appends. Secrets are redacted before writing: params the command's spec calls secret (the
//! text typed into a password field), then `redact::value` — the engine's one redaction, shared
//! with the state files and receipts (secret keys and URL parameters, credentials, card
//! numbers). Nothing here can fail a command: write errors are warned about once.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};

use serde_json::{json, Map, Value};

use crate::browser::task::TaskId;
use crate::clock::epoch_ms;
use crate::command::param::{ParamSpec, Secrecy};
use crate::protocol::Receipt;

const QUEUE: usize = 10_000;
use crate::redact::value as redact;
pub use crate::redact::MASK;
/// Receipt fields copied into the line's `result`.
const HIGHLIGHTS: &[&str] = &[
    "url",
    "title",
    "seq",
    "screenshot",
    "screenshot_path",
    "state_file",
    "changed",
    "changeStatus",
    "status",
    "errorCode",
    "id",
    "count",
    "closed",
    "value",
    "path",
    "requestId",
    "urlAfter",
    "textLength",
    "effective",
    "outcomeUnknown",
    "clickPoint",
];

tokio::task_local! {
    /// Where in a script the command being sent was written (`file:line`): a Lua host sets it
    /// around its call, and the command's trace line carries it (`at`), for the report.
    pub static SCRIPT_AT: Arc<str>;
    /// While an index action runs (the executor sets it): the description of the element its
    /// index meant, read with the action's first read of it (`target::find`); the trace line
    /// carries it (`element`), for `moonpilot codegen`.
    pub static ELEMENT_NOTE: ElementNote;
}

/// The description of an index action's element, read with the action's first read of it
/// (see [`ELEMENT_NOTE`]): `{selector, tag, role, name, label, text, attributes[, frame]}`.
#[derive(Clone, Default)]
pub struct ElementNote(Arc<Mutex<NoteState>>);

#[derive(Default)]
struct NoteState {
    /// Asked for by a read already (a drag's second element is not the one).
    asked: bool,
    element: Option<Value>,
}

impl ElementNote {
    /// Whether the element is still to be described (the first read of the command asks).
    pub fn ask(&self) -> bool {
        self.0
            .lock()
            .map(|mut n| !std::mem::replace(&mut n.asked, true))
            .unwrap_or(false)
    }

    /// Whether the description is still to come (the read that asked has not answered).
    pub fn wants(&self) -> bool {
        self.0.lock().map(|n| n.element.is_none()).unwrap_or(false)
    }

    /// The description that read answered.
    pub fn set(&self, element: Value) {
        if let Ok(mut n) = self.0.lock() {
            n.element = Some(element);
        }
    }

    /// The description, if one was read.
    pub fn take(&self) -> Option<Value> {
        self.0.lock().ok().and_then(|mut n| n.element.take())
    }
}

struct Record {
    seq: u64,
    ts: u64,
    /// The script line that sent it, if a script did.
    at: Option<Arc<str>>,
    /// The recorded run the command belongs to, if any.
    run: Option<Arc<str>>,
    task: Option<TaskId>,
    method: String,
    /// The command's params as declared, for their secrecy (none for an unknown method).
    declared: &'static [ParamSpec],
    params: Value,
    receipt: Receipt,
    /// What the command's index meant (`ELEMENT_NOTE`).
    element: Option<Value>,
}

/// The receipt with its data cut down to the highlights and the password flag: a queued
/// record never holds page snapshots or images.
fn light(receipt: &Receipt) -> Receipt {
    let mut data = Map::new();
    if let Some(all) = receipt.data.as_object() {
        for key in HIGHLIGHTS.iter().chain(["password"].iter()) {
            if let Some(v) = all.get(*key) {
                data.insert((*key).to_string(), v.clone());
            }
        }
    }
    Receipt::success("", Value::Object(data), 0.0).with_outcome_of(receipt)
}

/// What the writer thread is sent.
enum Msg {
    /// One command's record (boxed: a flush is a pointer wide).
    Record(Box<Record>),
    /// Write out everything sent before, then answer.
    Flush(tokio::sync::oneshot::Sender<()>),
}

/// How long the writer lets records gather before it writes them: one wake-up per batch, not
/// per command, so the writer thread does not compete with the engine's for the CPU on every
/// call (measured: get_title through Lua 1.20x raw CDP with a wake per record, 1.11x without a
/// trace).
const BATCH: std::time::Duration = std::time::Duration::from_millis(50);

/// The trace writer's front end.
pub struct Tracer {
    tx: SyncSender<Msg>,
    /// The writer thread, woken early by a flush.
    writer: Option<std::thread::Thread>,
    seq: AtomicU64,
    warned_full: AtomicBool,
    /// The run id put on every line from now on (locked only to copy or swap).
    run: Mutex<Option<Arc<str>>>,
}

impl Tracer {
    /// Starts the writer thread for `dir`.
    pub fn start(dir: PathBuf) -> Tracer {
        let (tx, rx) = sync_channel(QUEUE);
        let spawned = std::thread::Builder::new()
            .name("moonpilot-trace".into())
            .spawn(move || write_loop(dir, rx));
        let writer = match spawned {
            Ok(handle) => Some(handle.thread().clone()),
            Err(e) => {
                tracing::warn!("trace log disabled: cannot start its writer: {e}");
                None
            }
        };
        Tracer {
            tx,
            writer,
            seq: AtomicU64::new(0),
            warned_full: AtomicBool::new(false),
            run: Mutex::new(None),
        }
    }

    /// Tags the lines of the commands recorded from now on with `run` (none: untagged).
    pub fn set_run(&self, run: Option<&str>) {
        if let Ok(mut current) = self.run.lock() {
            *current = run.map(Arc::from);
        }
    }

    /// Queues one command's record; never blocks.
    pub fn record(
        &self,
        task: Option<TaskId>,
        method: &str,
        declared: &'static [ParamSpec],
        params: Value,
        receipt: &Receipt,
        element: Option<Value>,
    ) {
        let record = Record {
            seq: self.seq.fetch_add(1, Ordering::Relaxed) + 1,
            ts: epoch_ms(),
            at: SCRIPT_AT.try_with(Arc::clone).ok(),
            run: self.run.lock().ok().and_then(|r| r.clone()),
            task,
            method: method.to_string(),
            declared,
            params,
            receipt: light(receipt),
            element,
        };
        match self.tx.try_send(Msg::Record(Box::new(record))) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                if !self.warned_full.swap(true, Ordering::Relaxed) {
                    tracing::warn!("trace queue full ({QUEUE}): records are being dropped");
                }
            }
            Err(TrySendError::Disconnected(_)) => {}
        }
    }
}

/// Today's trace directory name (`yyyymmdd`, UTC).
pub fn today() -> String {
    utc_date(epoch_ms())
}

/// `yyyymmdd` of a UTC epoch-ms time: the name of the day directory its lines go to.
pub fn utc_date(ms: u64) -> String {
    let (y, m, d) = civil(ms);
    format!("{y:04}{m:02}{d:02}")
}

/// An epoch-ms time as an ISO-8601 UTC instant (`2026-12-01T14:04:54.123Z`).
pub fn iso_utc(ms: u64) -> String {
    let (y, m, d) = civil(ms);
    let t = ms % 86_400_000;
    let (h, min, s, milli) = (t / 3_600_000, t / 60_000 % 60, t / 1000 % 60, t % 1000);
    format!("{y:04}-{m:02}-{d:02}T{h:02}:{min:02}:{s:02}.{milli:03}Z")
}

/// The UTC calendar day of an epoch-ms time (Howard Hinnant's civil-from-days).
fn civil(ms: u64) -> (i64, i64, i64) {
    let days = (ms / 86_400_000) as i64;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

impl Tracer {
    /// Waits (1 s at most) until every record sent so far is written: the end of a run must
    /// not lose the last commands' lines.
    pub async fn flush(&self) {
        let (done, written) = tokio::sync::oneshot::channel();
        if self.tx.try_send(Msg::Flush(done)).is_err() {
            return;
        }
        if let Some(writer) = &self.writer {
            writer.unpark();
        }
        let _ = tokio::time::timeout(std::time::Duration::from_secs(1), written).await;
    }
}

fn write_loop(dir: PathBuf, rx: Receiver<Msg>) {
    let mut current: Option<(String, std::io::BufWriter<std::fs::File>)> = None;
    let mut warned = false;
    let mut warn = |e: &dyn std::fmt::Display| {
        if !warned {
            warned = true;
            tracing::warn!("trace log: {e} (further errors are not reported)");
        }
    };
    while let Ok(first) = rx.recv() {
        // This is the writer's own thread, never the engine's: parking it lets records gather
        // (a flush unparks it at once).
        if matches!(first, Msg::Record(_)) {
            std::thread::park_timeout(BATCH);
        }
        let mut batch = vec![first];
        batch.extend(rx.try_iter());
        let mut flushes = Vec::new();
        for msg in batch {
            let record = match msg {
                Msg::Record(record) => *record,
                Msg::Flush(done) => {
                    flushes.push(done);
                    continue;
                }
            };
            let date = utc_date(record.ts);
            if current.as_ref().map(|(d, _)| d != &date).unwrap_or(true) {
                let day = dir.join(&date);
                let opened = std::fs::create_dir_all(&day).and_then(|()| {
                    std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(day.join("calls.jsonl"))
                });
                match opened {
                    Ok(f) => current = Some((date, std::io::BufWriter::new(f))),
                    Err(e) => {
                        warn(&e);
                        current = None;
                        continue;
                    }
                }
            }
            if let Some((_, out)) = current.as_mut() {
                let line = line_of(record);
                if let Err(e) = writeln!(out, "{line}") {
                    warn(&e);
                }
            }
        }
        if let Some((_, out)) = current.as_mut() {
            if let Err(e) = out.flush() {
                warn(&e);
            }
        }
        for done in flushes {
            let _ = done.send(());
        }
    }
}

/// The JSON line of one record, redacted.
fn line_of(r: Record) -> Value {
    let mut request = r.params;
    // Params the spec calls secret: always, or — for text typed into a field — when the field
    // was a password field (the command found out), or the command failed before it could tell.
    // Then a typing command's undeclared string params are masked too: a misspelt or
    // Playwright-style `value` may be the very text.
    let typed_masked = r.receipt.data.get("password") == Some(&Value::Bool(true)) || !r.receipt.ok;
    let typing = r.declared.iter().any(|p| p.secrecy == Secrecy::Typed);
    if let Some(obj) = request.as_object_mut() {
        for (key, value) in obj.iter_mut() {
            let masked = match r.declared.iter().find(|p| p.name == key) {
                Some(p) => match p.secrecy {
                    Secrecy::Plain => false,
                    Secrecy::Always => true,
                    Secrecy::Typed => typed_masked,
                },
                None => typing && typed_masked && value.is_string(),
            };
            if masked {
                *value = json!(MASK);
            }
        }
    }
    redact(&mut request);
    let mut result = Map::new();
    if let Some(data) = r.receipt.data.as_object() {
        for key in HIGHLIGHTS {
            if let Some(v) = data.get(*key) {
                result.insert((*key).to_string(), v.clone());
            }
        }
    }
    let mut result = Value::Object(result);
    redact(&mut result);
    let mut msg = r
        .receipt
        .msg
        .clone()
        .map(Value::String)
        .unwrap_or(Value::Null);
    redact(&mut msg);
    let mut line = json!({
        "seq": r.seq,
        "ts": r.ts,
        "durationMs": r.receipt.elapsed_ms,
        "taskId": r.task.map(|t| t.to_string()),
        "method": r.method,
        "ok": r.receipt.ok,
        "code": r.receipt.code.map(|c| c.as_str()),
        "msg": msg,
        "started": r.receipt.started,
        "retryable": r.receipt.retryable,
        "request": request,
        "result": result,
    });
    if let (Some(run), Some(obj)) = (r.run, line.as_object_mut()) {
        obj.insert("run".into(), json!(&*run));
    }
    if let (Some(at), Some(obj)) = (r.at, line.as_object_mut()) {
        obj.insert("at".into(), json!(&*at));
    }
    if let (Some(mut element), Some(obj)) = (r.element, line.as_object_mut()) {
        redact(&mut element);
        obj.insert("element".into(), element);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ErrorCode;

    #[test]
    fn dates_are_utc_calendar_days() {
        assert_eq!(utc_date(0), "19700101");
        assert_eq!(utc_date(951_782_400_000), "20000229");
        assert_eq!(utc_date(1_798_675_200_000), "20261231");
        assert_eq!(utc_date(1_798_675_199_999), "20261230");
        assert_eq!(iso_utc(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_utc(1_798_675_199_999), "2026-12-30T23:59:59.999Z");
    }

    fn traced(method: &str, params: Value, receipt: Receipt) -> Value {
        let spec = crate::commands::registry()
            .lookup(method)
            .expect("a registered command");
        line_of(Record {
            seq: 1,
            ts: 0,
            at: None,
            run: None,
            task: Some(TaskId(5)),
            method: method.into(),
            declared: spec.params,
            params,
            receipt,
            element: None,
        })
    }

    #[test]
    fn text_typed_into_a_password_field_is_masked() {
        let receipt =
            Receipt::success("input_text", json!({"mode": "fill", "password": true}), 1.0);
        let line = traced(
            "input_text",
            json!({"index": 3, "text": "hunter2"}),
            receipt,
        );
        assert_eq!(line["request"]["text"], MASK);
        assert_eq!(line["request"]["index"], 3);
        assert_eq!(line["taskId"], "5");
        assert_eq!(line["ok"], true);
        // Into an ordinary field it is kept.
        let receipt = Receipt::success("type_text", json!({"mode": "type"}), 1.0);
        let line = traced("type_text", json!({"index": 3, "text": "hunter2"}), receipt);
        assert_eq!(line["request"]["text"], "hunter2");
    }

    #[test]
    fn a_failed_typing_command_masks_its_text_under_any_name() {
        for method in ["input_text", "type_text"] {
            let failed = Receipt::failure(
                method,
                ErrorCode::InvalidArgument,
                "missing parameter `text`".into(),
                None,
                false,
                1.0,
            );
            let line = traced(
                method,
                json!({"index": 2, "value": "hunter2", "text": "s3cret", "mode": 7}),
                failed,
            );
            assert_eq!(line["request"]["value"], MASK, "{method}");
            assert_eq!(line["request"]["text"], MASK, "{method}");
            assert_eq!(line["request"]["index"], 2, "{method}");
            assert_eq!(line["request"]["mode"], 7, "{method}: not a string");
        }
    }
}
