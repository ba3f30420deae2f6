//! Capture: `screenshot`, `get_element_screenshot`, `pdf`, `download_image`, `ocr_image`.
//!
//! Files go to the task's data directory (`data/<task>/shot-N.png`, `page-N.pdf`,
//! `img-N<ext>`; N per task and kind, only increasing) unless a `path` is given, whose directory
//! must exist. An absolute `path` (and ocr_image's input `path`) may name any place the process
//! may write (read): the Lua API's callers are local; a server in front of the engine is to gate
//! paths itself. Paths are normalised, and only files really inside the task's data directory
//! get a `/data/...` URL and count for evidence pruning. Screenshots share the task's capture
//! circuit breaker with auto-capture (PROTOCOL.md §8): open and not forced is
//! `CAPTURE_CIRCUIT_OPEN` in the failure's data (`started:false`); a failed shot is
//! `CAPTURE_FAILED` there.
//! OCR runs Debian's Tesseract CLI (`tesseract`, packages `tesseract-ocr`,
//! `tesseract-ocr-eng`, `tesseract-ocr-chi-sim`); `request_human_input{ocr=true}` uses the same
//! [`ocr_file`].

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use crate::browser::breaker::{is_spurious, Gate};
use crate::browser::tab::{Shot as TabShot, ShotArea, MAX_FULL_PAGE_HEIGHT};
use crate::browser::task::Task;
use crate::command::*;
use crate::door::{normalise, Trust};
use crate::engine::Engine;
use crate::error::CommandError;
use crate::js;
use crate::protocol::{ErrorCode, Params};

use super::target::{self, index_value, Locator, Read, Takes, FRAME_PARAM, INDEX_OR, SELECTOR_OR};

/// download_image's limit (PROTOCOL.md "Other fixed limits").
const MAX_IMAGE_BYTES: usize = 64 * 1024 * 1024;
/// How long ocr_image's element screenshot may take (`browser.capture.timeoutMs`).
const OCR_SHOT_BUDGET: Duration = Duration::from_secs(8);
/// The OCR budget (`browser.ocr.timeoutMs`).
const OCR_TIMEOUT: Duration = Duration::from_secs(120);

const PATH_PARAM: ParamSpec = string(
    "path",
    "server file path; absent and not inline -> data/<id>/shot-N.png (N per task, only increases)",
);
const TIMEOUT_PARAM: ParamSpec = int(
    "timeoutMs",
    "capture budget 1..120000 ms (outside -> INVALID_ARGUMENT); absent = browser.capture.timeoutMs",
)
.or("8000")
.range(1.0, 120_000.0);

/// The capture group.
pub const SPECS: &[CommandSpec] = &[
    Group::Capture
        .read("screenshot", screenshot)
        .summary("Save a PNG of the viewport, whole page, an element or a clip")
        .doc("index or selector shoots that element; clipX/clipY/clipWidth/clipHeight (all four, \
              viewport CSS px) a box; fullPage the whole scrollable page; else the viewport. \
              Written to path (absolute, its directory must exist; a plain file name goes to the \
              task's data dir) or data/<task>/shot-N.png; base64 only \
              with inline:true. width/height are the PNG's pixel size. Shares the capture \
              circuit breaker with auto-capture (force:true probes once through it).")
        .params(&[
            PATH_PARAM,
            boolean("fullPage", "capture the whole scrollable page").or("false"),
            INDEX_OR,
            SELECTOR_OR,
            number("clipX", "clip x (all four clip values required to clip)"),
            number("clipY", "clip y"),
            number("clipWidth", "clip width"),
            number("clipHeight", "clip height"),
            boolean("inline", "return base64 in the response (expensive for model context)").or("false"),
            TIMEOUT_PARAM,
            boolean("force", "probe once even while the capture circuit is open").or("false"),
            boolean("fallbackToViewport", "full-page only: on failure retry as a viewport shot within the remaining budget").or("false"),
        ])
        .example("local s = page:screenshot{ fullPage = true }:unwrap(); print(s.path, s.width, s.height)"),
    Group::Capture
        .read("get_element_screenshot", get_element_screenshot)
        .summary("Save a PNG of one element, also inside a cross-site frame")
        .doc("The element of index, or of selector in frame (a visible match preferred), scrolled \
              into view and cut from the tab's screenshot, so cross-origin frames and tainted \
              canvases show as the person sees them. Written to path or data/<task>/shot-N.png.")
        .params(&[
            INDEX_OR,
            SELECTOR_OR,
            string("path", "server file path; default data/<id>/shot-N.png unless inline"),
            boolean("inline", "return base64").or("false"),
            FRAME_PARAM,
            int("timeoutMs", "capture budget 1..120000 ms").or("8000").range(1.0, 120_000.0),
            boolean("force", "single probe through an open circuit").or("false"),
        ])
        .example("local s = page:get_element_screenshot{ selector = \"#captcha\" }:unwrap(); print(s.path)"),
    Group::Capture
        .read("pdf", pdf)
        .summary("Print the page to a PDF file; answers its path, size and page count")
        .doc("Chromium's print to PDF, backgrounds included. Written to path (its directory must exist) or \
              data/<task>/page-N.pdf.")
        .params(&[string("path", "output path; default data/<id>/page-N.pdf")])
        .example("print(page:pdf{}:unwrap().path)")
        .long(),
    Group::Capture
        .read("download_image", download_image)
        .summary("Save the original file of an image element (fetched with the page's cookies)")
        .doc("Reads the element's currentSrc/src (poster, SVG href or CSS background image \
              otherwise) and fetches it through the browser's network stack with the page's \
              cookies (via browser-context), else with a fetch inside the page (in-page-fetch: blob: \
              URLs); a data: URL is decoded (data-url). Both failing is a failure with both reasons. At most 64 MiB; a new data/<task>/img-N<ext> each \
              time (not retry-safe). An element without an image is a failure 'not an image'.")
        .params(&[
            INDEX_OR,
            SELECTOR_OR,
            FRAME_PARAM,
            string("filename", "sanitised file name; default img-<n><ext>"),
        ])
        .example("local d = page:download_image{ selector = \"img.logo\" }:unwrap(); print(d.path, d.sha256)")
        .retry_safe(false)
        .long(),
    Group::Capture
        .engine("ocr_image", ocr_image)
        .summary("Read the text of an image file or an element with Tesseract OCR")
        .doc("path (an existing image) wins; otherwise the element of index/selector (in frame) \
              is shot to data/<task>/shot-N.png first (needs a task). language takes catalogue \
              names (zh-Hans-CN, en-US, ...) or Tesseract's (eng, chi_sim, eng+chi_sim). A failed \
              OCR is ok at the envelope with data.ok:false, error and, when Tesseract is not \
              installed, engineMissing with the Debian packages to install.")
        .params(&[
            string("path", "existing server image path"),
            INDEX_OR,
            SELECTOR_OR,
            FRAME_PARAM,
            string("language", "OCR language").or("\"zh-Hans-CN\""),
        ])
        .example("print(browser.call(\"ocr_image\", { path = \"/tmp/code.png\", language = \"en\" }).data.text)")
        .long(),
];

// ---- Files ----

/// The highest `<prefix>N` number among the files in `dir` (0 when none or no dir); reads the
/// directory on a blocking thread.
async fn highest_on_disk(dir: &Path, prefix: &str) -> u64 {
    let (dir, prefix) = (dir.to_path_buf(), prefix.to_string());
    tokio::task::spawn_blocking(move || {
        std::fs::read_dir(&dir)
            .map(|entries| {
                entries
                    .filter_map(|e| e.ok())
                    .filter_map(|e| {
                        let name = e.file_name().to_string_lossy().into_owned();
                        let rest = name.strip_prefix(&prefix)?;
                        let digits: String =
                            rest.chars().take_while(char::is_ascii_digit).collect();
                        digits.parse::<u64>().ok()
                    })
                    .max()
                    .unwrap_or(0)
            })
            .unwrap_or(0)
    })
    .await
    .unwrap_or(0)
}

/// The task's data directory, created if need be.
async fn task_dir(engine: &Engine, task: &Task) -> Result<PathBuf, CommandError> {
    let dir = engine.config.data_dir.join(task.id.to_string());
    tokio::fs::create_dir_all(&dir)
        .await
        .map_err(|e| CommandError::failed(format!("cannot create {}: {e}", dir.display())))?;
    Ok(dir)
}

/// The next free `<prefix>N<ext>` name in the task's data dir (N above the files there and
/// above every number handed out before).
async fn numbered(
    engine: &Engine,
    task: &Task,
    prefix: &str,
    ext: &str,
) -> Result<PathBuf, CommandError> {
    let dir = task_dir(engine, task).await?;
    let n = task.next_file_number(prefix, highest_on_disk(&dir, prefix).await);
    Ok(dir.join(format!("{prefix}{n}{ext}")))
}

/// Where a file goes: a `given` path settled by [`settle_out_path`], or the task's data directory with
/// `<prefix>N<ext>`. Answers the path and, when it is really inside the task's data directory,
/// its `/data/...` URL.
async fn out_file(
    engine: &Engine,
    task: &Task,
    given: Option<OutPath>,
    prefix: &'static str,
    ext: &str,
) -> Result<(PathBuf, Option<String>), CommandError> {
    let path = match given {
        Some(OutPath::Absolute(path)) => path,
        Some(OutPath::Relative(name)) => task_dir(engine, task).await?.join(name),
        None => numbered(engine, task, prefix, ext).await?,
    };
    let url = data_url(engine, task, &path).await;
    Ok((path, url))
}

/// `/data/<task>/<rel>` for a path really inside the task's data directory (links and `..`
/// resolved), `None` otherwise.
pub(super) async fn data_url(engine: &Engine, task: &Task, path: &Path) -> Option<String> {
    let dir = engine.config.data_dir.join(task.id.to_string());
    let root = tokio::fs::canonicalize(&dir).await.ok()?;
    let parent = tokio::fs::canonicalize(path.parent()?).await.ok()?;
    let abs = parent.join(path.file_name()?);
    let rel = abs.strip_prefix(&root).ok()?;
    let rel = rel.to_str()?.to_string();
    (!rel.is_empty()).then(|| format!("/data/{}/{rel}", task.id))
}

/// Writes `bytes` to `path`, then tells the evidence keeper when the file is really inside
/// the task's data dir. Answers the absolute path.
async fn write_file(
    engine: &Engine,
    task: &Task,
    path: &Path,
    bytes: &[u8],
) -> Result<String, CommandError> {
    tokio::fs::write(path, bytes)
        .await
        .map_err(|e| CommandError::failed(format!("cannot write {}: {e}", path.display())))?;
    if data_url(engine, task, path).await.is_some() {
        engine.keeper.written(path, bytes.len() as u64);
    }
    Ok(std::path::absolute(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string())
}

/// An output `path` param: absolute (normalised), or relative, which the door resolves when
/// the command runs ([`settle_out_path`]): against the working directory of a local script or
/// an MCP root, or as the seed does, a plain file name in the task's data directory.
enum OutPath {
    Absolute(PathBuf),
    Relative(String),
}

/// Reads an output `path` param without touching the file system. The door's rule and the
/// directory are checked by [`settle_out_path`] when the command runs.
fn read_out_path(p: &mut Params) -> Result<Option<OutPath>, CommandError> {
    let Some(raw) = p.str_opt("path")? else {
        return Ok(None);
    };
    let path = PathBuf::from(&raw);
    if !path.is_absolute() {
        return Ok(Some(OutPath::Relative(raw)));
    }
    let normal = normalise(&path);
    if normal.file_name().is_none() {
        return Err(CommandError::invalid(
            "path",
            format!("param `path`: `{raw}` names no file"),
        ));
    }
    Ok(Some(OutPath::Absolute(normal)))
}

/// An output path as the door resolves and allows it (`INVALID_ARGUMENT`, nothing written,
/// otherwise): a relative one by the door's rule, then the directory checked, then whether the
/// door may write there (`door.rs`: the real path, symlinks resolved).
async fn settle_out_path(
    trust: &Trust,
    engine: &Engine,
    task: &Task,
    given: Option<OutPath>,
) -> Result<Option<OutPath>, CommandError> {
    let absolute = match given {
        None => return Ok(None),
        Some(OutPath::Absolute(path)) => path,
        Some(OutPath::Relative(raw)) => match trust.absolute(Path::new(&raw)) {
            Some(path) => path,
            None => {
                let plain = Path::new(&raw).components().count() == 1
                    && matches!(
                        Path::new(&raw).components().next(),
                        Some(std::path::Component::Normal(_))
                    );
                if !plain {
                    return Err(CommandError::invalid(
                        "path",
                        format!(
                            "param `path`: `{raw}` is relative: give an absolute path, or a plain file name for the task's data directory"
                        ),
                    ));
                }
                task_dir(engine, task).await?.join(raw)
            }
        },
    };
    if absolute.file_name().is_none() {
        return Err(CommandError::invalid(
            "path",
            format!("param `path`: `{}` names no file", absolute.display()),
        ));
    }
    // Where paths are confined, the door answers first: what exists outside its places is
    // not told by which check failed.
    if trust.confined() {
        trust.write("path", &absolute).await?;
    }
    let checked = check_out_path(&absolute).await?;
    let allowed = trust.write("path", &checked).await?;
    // Shown as given where the door is open; as its real path where it was resolved.
    Ok(Some(OutPath::Absolute(if trust.confined() {
        allowed
    } else {
        checked
    })))
}

/// An absolute output path's checks (`INVALID_ARGUMENT`, nothing written): its directory
/// exists and it is not a directory itself. Answers it (normalised, as given).
async fn check_out_path(path: &Path) -> Result<PathBuf, CommandError> {
    let parent = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let Ok(real) = tokio::fs::canonicalize(&parent).await else {
        return Err(CommandError::invalid(
            "path",
            format!(
                "param `path`: the directory `{}` does not exist",
                parent.display()
            ),
        ));
    };
    if !tokio::fs::metadata(&real).await.is_ok_and(|m| m.is_dir()) {
        return Err(CommandError::invalid(
            "path",
            format!("param `path`: `{}` is not a directory", parent.display()),
        ));
    }
    let file = real.join(path.file_name().unwrap_or_default());
    if tokio::fs::metadata(&file).await.is_ok_and(|m| m.is_dir()) {
        return Err(CommandError::invalid(
            "path",
            format!(
                "param `path`: `{}` is a directory; name a file",
                path.display()
            ),
        ));
    }
    Ok(path.to_path_buf())
}

/// The pixel size of a PNG (its IHDR chunk), `None` when it is not one.
pub fn png_size(png: &[u8]) -> Option<(u32, u32)> {
    if png.len() < 24 || &png[..8] != b"\x89PNG\r\n\x1a\n" || &png[12..16] != b"IHDR" {
        return None;
    }
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    Some((be(&png[16..20]), be(&png[20..24])))
}

/// How many pages a PDF has: its `/Type /Page` objects (not `/Pages`).
fn pdf_pages(pdf: &[u8]) -> usize {
    let text = String::from_utf8_lossy(pdf);
    let mut n = 0;
    for (at, _) in text.match_indices("/Type") {
        let rest = text[at + 5..].trim_start();
        if let Some(after) = rest.strip_prefix("/Page") {
            if !after.starts_with('s') {
                n += 1;
            }
        }
    }
    n
}

// ---- Screenshots ----

/// What a screenshot shows.
enum Mode {
    Viewport,
    Full { fallback: bool },
    Clip([f64; 4]),
    Element(Locator),
}

impl Mode {
    fn name(&self) -> &'static str {
        match self {
            Mode::Viewport => "viewport",
            Mode::Full { .. } => "fullPage",
            Mode::Clip(_) => "clip",
            Mode::Element(_) => "element",
        }
    }
}

/// The shot's request: what, where, how long.
struct Shot {
    mode: Mode,
    path: Option<OutPath>,
    inline: bool,
    budget: Duration,
    force: bool,
}

fn read_clip(p: &mut Params) -> Result<Option<[f64; 4]>, CommandError> {
    let names = ["clipX", "clipY", "clipWidth", "clipHeight"];
    let mut vals = [None; 4];
    for (v, name) in vals.iter_mut().zip(names) {
        *v = p.num_opt(name)?;
    }
    if vals.iter().all(Option::is_none) {
        return Ok(None);
    }
    if let Some(i) = vals.iter().position(Option::is_none) {
        return Err(CommandError::invalid(
            names[i],
            format!(
                "param `{}`: missing; clipping needs all four of clipX, clipY, clipWidth, clipHeight",
                names[i]
            ),
        ));
    }
    let [x, y, w, h] = vals.map(|v| v.unwrap_or_default());
    for (v, name) in [(w, "clipWidth"), (h, "clipHeight")] {
        if v.is_nan() || v <= 0.0 {
            return Err(CommandError::invalid(
                name,
                format!("param `{name}`: must be > 0, got {v}"),
            ));
        }
    }
    for (v, name) in [(x, "clipX"), (y, "clipY")] {
        if v < 0.0 {
            return Err(CommandError::invalid(
                name,
                format!("param `{name}`: must be >= 0, got {v}"),
            ));
        }
    }
    Ok(Some([x, y, w, h]))
}

fn read_budget(p: &mut Params) -> Result<Duration, CommandError> {
    let ms = p.int_opt("timeoutMs")?.unwrap_or(8000);
    Ok(Duration::from_millis(ms.clamp(1, 120_000) as u64))
}

fn screenshot(p: &mut Params) -> Prepared<TaskCx> {
    let path = read_out_path(p)?;
    let full = p.bool_or("fullPage", false)?;
    let index = p.int_opt("index")?;
    let selector = p.str_opt("selector")?;
    let clip = read_clip(p)?;
    let inline = p.bool_or("inline", false)?;
    let budget = read_budget(p)?;
    let force = p.bool_or("force", false)?;
    let fallback = p.bool_or("fallbackToViewport", false)?;
    let mode = match (index, selector, clip) {
        (Some(i), _, _) => Mode::Element(Locator::Index(index_value(i)?)),
        (None, Some(css), _) => Mode::Element(Locator::css(css)),
        (None, None, Some(rect)) => Mode::Clip(rect),
        _ if full => Mode::Full { fallback },
        _ => Mode::Viewport,
    };
    let shot = Shot {
        mode,
        path,
        inline,
        budget,
        force,
    };
    run(move |cx: TaskCx| async move { take(&cx, shot).await })
}

fn get_element_screenshot(p: &mut Params) -> Prepared<TaskCx> {
    let locator = target::index_or_selector(p, "get_element_screenshot", Takes::FRAME)?;
    let path = read_out_path(p)?;
    let inline = p.bool_or("inline", false)?;
    let budget = read_budget(p)?;
    let force = p.bool_or("force", false)?;
    let shot = Shot {
        mode: Mode::Element(locator),
        path,
        inline,
        budget,
        force,
    };
    run(move |cx: TaskCx| async move { take(&cx, shot).await })
}

/// The capture diagnostics of a receipt.
fn diagnostics(
    requested: &str,
    actual: &str,
    started: Instant,
    budget: Duration,
    stage: &str,
    half_open: bool,
) -> Value {
    json!({
        "requestedMode": requested, "actualMode": actual, "attempts": 1, "retries": 0,
        "elapsedMs": started.elapsed().as_millis() as u64, "timeoutMs": budget.as_millis() as u64,
        "stage": stage, "halfOpen": half_open,
    })
}

/// Failures of finding the element, not of the capture: they do not count on the breaker.
fn element_failure(code: ErrorCode) -> bool {
    matches!(
        code,
        ErrorCode::InvalidArgument
            | ErrorCode::ElementNotFound
            | ErrorCode::StaleElement
            | ErrorCode::ElementHidden
    )
}

/// The failure of a shot that ran out of its budget.
fn capture_timeout(budget: Duration) -> CommandError {
    CommandError::failed(format!(
        "the screenshot took longer than its budget of {} ms",
        budget.as_millis()
    ))
    .with_details(json!({"captureTimeout": true}))
}

/// Takes a screenshot as `shot` says, writes it and answers the receipt's data.
async fn take(cx: &TaskCx, shot: Shot) -> Result<Value, CommandError> {
    let started = Instant::now();
    let requested = shot.mode.name();
    let engine = &cx.engine;
    // The output path first: a bad one is a bad argument, and nothing has run.
    let given = settle_out_path(&cx.trust, engine, &cx.task, shot.path).await?;
    let gate = cx.task.capture_breaker(|b| b.gate(Instant::now()));
    let half_open = matches!(gate, Gate::Closed { half_open: true });
    if let (Gate::Open { left }, false) = (gate, shot.force) {
        let note = format!(
            "screenshots of this task failed repeatedly: the capture circuit is open for {} ms more (force:true probes once)",
            left.as_millis()
        );
        return Err(CommandError::failed(note.clone())
            .with_details(json!({
                "errorCode": "CAPTURE_CIRCUIT_OPEN", "retryAfterMs": left.as_millis() as u64,
                "capture_degraded": true, "capture_note": note,
                "capture": diagnostics(requested, requested, started, shot.budget, "circuit-open", false),
            }))
            .not_sent());
    }
    let deadline = started + shot.budget;
    let left = move || deadline.saturating_duration_since(Instant::now());
    let mut data = Map::new();
    let mut actual = requested;
    let work = async {
        match &shot.mode {
            Mode::Viewport => cx.tab()?.shoot(ShotArea::Viewport, left()).await,
            Mode::Clip(rect) => cx.tab()?.shoot(ShotArea::Box(*rect), left()).await,
            Mode::Full { .. } => cx.tab()?.shoot(ShotArea::FullPage, left()).await,
            Mode::Element(locator) => {
                let (png, fields) = element_shot(&cx.task, locator, deadline).await?;
                data.extend(fields);
                Ok(png)
            }
        }
    };
    // A shot that ran out of time says so with the caller's budget (not what was left of it).
    let timed_out = |e: &CommandError| {
        e.details
            .as_deref()
            .is_some_and(|d| d["captureTimeout"] == json!(true))
    };
    let outcome = match tokio::time::timeout(shot.budget, work).await {
        Ok(Err(e)) if timed_out(&e) => Err(capture_timeout(shot.budget)),
        Ok(r) => r,
        Err(_) => Err(capture_timeout(shot.budget)),
    };
    let outcome = match (outcome, &shot.mode) {
        (Err(e), Mode::Full { fallback: true }) if !shot.force && !element_failure(e.code) => {
            data.insert("fallbackUsed".into(), json!(true));
            data.insert("fullPageCaptured".into(), json!(false));
            data.insert("fallbackReason".into(), json!(e.msg));
            data.insert(
                "warning".into(),
                json!("the full page could not be captured: this is only the viewport"),
            );
            data.insert("capture_degraded".into(), json!(true));
            actual = "viewport";
            cx.tab()?.shoot(ShotArea::Viewport, left()).await
        }
        (outcome, _) => outcome,
    };
    let taken = match outcome {
        Ok(taken) => {
            cx.task.capture_breaker(|b| b.succeeded());
            taken
        }
        Err(e) => {
            if !element_failure(e.code) {
                let spurious = is_spurious(e.code);
                cx.task
                    .capture_breaker(|b| b.failed(spurious, Instant::now()));
            }
            let diag = diagnostics(
                requested,
                actual,
                started,
                shot.budget,
                "screenshot",
                half_open,
            );
            let mut m = match e.details.as_deref() {
                Some(Value::Object(m)) => m.clone(),
                _ => Map::new(),
            };
            m.insert("capture".into(), diag);
            if !element_failure(e.code) {
                m.insert("errorCode".into(), json!("CAPTURE_FAILED"));
                m.insert("screenshot_error".into(), json!(e.msg));
            }
            return Err(e.with_details(Value::Object(m)));
        }
    };
    let png = taken.png;
    let (path, url) = out_file(engine, &cx.task, given, "shot-", ".png").await?;
    let shown = write_file(engine, &cx.task, &path, &png).await?;
    let (width, height) = png_size(&png).unwrap_or((0, 0));
    data.insert("path".into(), json!(shown));
    if let Some(url) = url {
        data.insert("url".into(), json!(url));
    }
    data.insert("size".into(), json!(png.len()));
    data.insert("width".into(), json!(width));
    data.insert("height".into(), json!(height));
    data.insert("mode".into(), json!(actual));
    if matches!(shot.mode, Mode::Full { .. }) && actual == "fullPage" {
        data.insert("fullPageCaptured".into(), json!(!taken.clamped));
        if let (true, Some(page)) = (taken.clamped, taken.page_height) {
            data.insert("capture_degraded".into(), json!(true));
            data.insert("pageHeight".into(), json!(page));
            data.insert("capturedHeight".into(), json!(MAX_FULL_PAGE_HEIGHT));
            data.insert(
                "warning".into(),
                json!(format!(
                    "the page is {page} CSS px tall: the shot stops at {MAX_FULL_PAGE_HEIGHT} px, the rest is not in it"
                )),
            );
        }
    }
    inline_fields(&mut data, shot.inline, &png, "path");
    data.insert(
        "capture".into(),
        diagnostics(
            requested,
            actual,
            started,
            shot.budget,
            "complete",
            half_open,
        ),
    );
    Ok(Value::Object(data))
}

/// `inline`/`base64` or `base64Omitted` + `note`.
fn inline_fields(data: &mut Map<String, Value>, inline: bool, bytes: &[u8], field: &str) {
    data.insert("inline".into(), json!(inline));
    if inline {
        data.insert(
            "base64".into(),
            json!(crate::encoding::encode_base64(bytes)),
        );
    } else {
        data.insert("base64Omitted".into(), json!(true));
        data.insert(
            "note".into(),
            json!(format!(
                "base64 omitted (inline:false); read the file at {field}"
            )),
        );
    }
}

/// A PNG of `locator`'s element cut from its tab's screenshot (frames offset into the main
/// viewport), with the receipt's `target`, the element's CSS box and the selector's choice.
async fn element_shot(
    task: &Arc<Task>,
    locator: &Locator,
    deadline: Instant,
) -> Result<(TabShot, Map<String, Value>), CommandError> {
    let (found, state) = target::find(task, locator, Read::default()).await?;
    let offset = found.tab.frame_offset(&found.frames, &found.frame).await?;
    let rect = target::shifted_box(state.rect, offset).ok_or_else(|| {
        CommandError::new(
            ErrorCode::ElementHidden,
            format!("{} is not visible or has no layout", found.label),
        )
    })?;
    let left = deadline.saturating_duration_since(Instant::now());
    let png = found.tab.shoot(ShotArea::Box(rect), left).await?;
    let mut fields = found.located.clone().unwrap_or_default();
    fields.insert("target".into(), json!(target_text(locator)));
    fields.insert(
        "box".into(),
        json!({"x": rect[0], "y": rect[1], "width": rect[2], "height": rect[3]}),
    );
    Ok((png, fields))
}

/// `index=N` or `selector=...(frame=..)`.
fn target_text(locator: &Locator) -> String {
    match locator {
        Locator::Index(i) => format!("index={i}"),
        Locator::Selector { css, frame, .. } => match frame {
            Some(f) => format!("selector={css}(frame={f})"),
            None => format!("selector={css}"),
        },
        other => other.describe(),
    }
}

// ---- PDF ----

fn pdf(p: &mut Params) -> Prepared<TaskCx> {
    let path = read_out_path(p)?;
    run(move |cx: TaskCx| async move {
        // The path first: a bad one is a bad argument, and nothing has run.
        let path = settle_out_path(&cx.trust, &cx.engine, &cx.task, path).await?;
        let (path, url) = out_file(&cx.engine, &cx.task, path, "page-", ".pdf").await?;
        let bytes = cx.tab()?.print_pdf().await?;
        let shown = write_file(&cx.engine, &cx.task, &path, &bytes).await?;
        let mut data = json!({"path": shown, "size": bytes.len(), "pages": pdf_pages(&bytes)});
        if let Some(url) = url {
            data["url"] = json!(url);
        }
        Ok(data)
    })
}

// ---- download_image ----

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct ImageInfo {
    tag: String,
    src: String,
    alt: String,
    natural_width: Option<u64>,
    natural_height: Option<u64>,
}

/// A file name kept to `[A-Za-z0-9._-]` (others become `_`), no leading dots, at most 100
/// characters; `None` when nothing is left.
fn sanitise(name: &str) -> Option<String> {
    let base = name.rsplit(['/', '\\']).next().unwrap_or_default();
    let clean: String = crate::encoding::file_name_safe(base)
        .chars()
        .take(100)
        .collect();
    let clean = clean.trim_start_matches('.').to_string();
    (!clean.is_empty()).then_some(clean)
}

/// The file extension for a content type (or, failing that, the URL's), with its dot.
fn image_ext(content_type: Option<&str>, url: &str) -> &'static str {
    let ct = content_type.unwrap_or_default().to_ascii_lowercase();
    let by_type = [
        ("image/png", ".png"),
        ("image/jpeg", ".jpg"),
        ("image/gif", ".gif"),
        ("image/webp", ".webp"),
        ("image/svg+xml", ".svg"),
        ("image/avif", ".avif"),
        ("image/x-icon", ".ico"),
        ("image/vnd.microsoft.icon", ".ico"),
        ("image/bmp", ".bmp"),
    ];
    if let Some((_, ext)) = by_type.iter().find(|(t, _)| ct.starts_with(t)) {
        return ext;
    }
    let path = url
        .split(['?', '#'])
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    for ext in [
        ".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg", ".avif", ".ico", ".bmp",
    ] {
        if path.ends_with(ext) {
            return if ext == ".jpeg" { ".jpg" } else { ext };
        }
    }
    ".bin"
}

/// How much of a `data:` URL a receipt echoes.
const DATA_URL_ECHO: usize = 100;

/// `url` as a receipt or message echoes it: a long `data:` URL is cut to its first 100
/// characters and its length (a page's inline image can be megabytes).
fn echo_url(url: &str) -> String {
    if !url.starts_with("data:") || url.len() <= DATA_URL_ECHO {
        return url.to_string();
    }
    let cut: String = url.chars().take(DATA_URL_ECHO).collect();
    format!("{cut}... ({} chars)", url.len())
}

/// Writes an image to a NEW file of the task's data dir (never over an existing one): with
/// `filename`, `<stem><ext>` if free, else `<stem>-N<ext>`; otherwise `img-N<ext>`. The
/// image's own extension replaces an image extension the name has. The evidence keeper counts it.
async fn save_new_image(
    engine: &Engine,
    task: &Task,
    filename: Option<&str>,
    ext: &str,
    bytes: &[u8],
) -> Result<PathBuf, CommandError> {
    let dir = task_dir(engine, task).await?;
    let stem = filename.map(|name| {
        let lower = name.to_ascii_lowercase();
        let known = [
            ".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg", ".avif", ".ico", ".bmp", ".bin",
        ];
        match known.iter().find(|e| lower.ends_with(*e)) {
            Some(e) if name.len() > e.len() => name[..name.len() - e.len()].to_string(),
            _ => name.to_string(),
        }
    });
    let mut first = stem.as_ref().map(|s| dir.join(format!("{s}{ext}")));
    for _ in 0..1000 {
        let path = match first.take() {
            Some(p) => p,
            None => {
                let prefix = match &stem {
                    Some(s) => format!("{s}-"),
                    None => "img-".to_string(),
                };
                let n = task.next_file_number(&prefix, highest_on_disk(&dir, &prefix).await);
                dir.join(format!("{prefix}{n}{ext}"))
            }
        };
        let file = tokio::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .await;
        match file {
            Ok(mut f) => {
                use tokio::io::AsyncWriteExt;
                // Flushed before the path is answered: a tokio file finishes its last write in
                // the background otherwise, and a caller could read it short.
                let written = match f.write_all(bytes).await {
                    Ok(()) => f.flush().await,
                    Err(e) => Err(e),
                };
                written.map_err(|e| {
                    CommandError::failed(format!("cannot write {}: {e}", path.display()))
                })?;
                engine.keeper.written(&path, bytes.len() as u64);
                return Ok(path);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(CommandError::failed(format!(
                    "cannot write {}: {e}",
                    path.display()
                )))
            }
        }
    }
    Err(CommandError::failed(format!(
        "no free file name for the image in {}",
        dir.display()
    )))
}

fn download_image(p: &mut Params) -> Prepared<TaskCx> {
    let locator = target::index_or_selector(p, "download_image", Takes::FRAME)?;
    let filename = match p.str_opt("filename")? {
        Some(raw) => Some(sanitise(&raw).ok_or_else(|| {
            CommandError::invalid(
                "filename",
                format!("param `filename`: `{raw}` has no usable characters"),
            )
        })?),
        None => None,
    };
    run(move |cx: TaskCx| async move {
        let (found, _) = target::find(&cx.task, &locator, Read::QUIET).await?;
        let info: ImageInfo = found.call(js::IMAGE_INFO_JS, "image", json!({})).await?;
        if info.src.is_empty() {
            return Err(CommandError::failed(format!(
                "{} (<{}>) is not an image: it has no src, poster or background image",
                found.label, info.tag
            )));
        }
        let mut via = "browser-context";
        let (bytes, content_type) = match decode_data_url(&info.src) {
            Some(decoded) => {
                via = "data-url";
                decoded
            }
            None => match found.tab.download(&info.src, MAX_IMAGE_BYTES).await {
                Ok(got) => got,
                Err(first) => {
                    via = "in-page-fetch";
                    fetch_in_page(&found, &info.src).await.map_err(|second| {
                        let msg =
                            format!(
                            "cannot fetch the image `{}`: browser context: {}; in-page fetch: {}",
                            echo_url(&info.src), first.msg, second.msg
                        );
                        let details = first.details.as_deref().cloned();
                        let e = CommandError::new(first.code, msg);
                        match details {
                            Some(d) => e.with_details(d),
                            None => e,
                        }
                    })?
                }
            },
        };
        let ext = image_ext(content_type.as_deref(), &info.src);
        let path = save_new_image(&cx.engine, &cx.task, filename.as_deref(), ext, &bytes).await?;
        let shown = std::path::absolute(&path)
            .unwrap_or_else(|_| path.clone())
            .display()
            .to_string();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        use sha2::Digest;
        let sha = sha2::Sha256::digest(&bytes);
        let sha: String = sha.iter().map(|b| format!("{b:02x}")).collect();
        let mut data = json!({
            "filename": name, "path": shown, "url": format!("/data/{}/{name}", cx.task.id),
            "size": bytes.len(), "sha256": sha, "contentType": content_type,
            "srcUrl": echo_url(&info.src), "via": via, "alt": info.alt,
            "naturalWidth": info.natural_width, "naturalHeight": info.natural_height,
            "target": target_text(&locator),
        });
        if info.tag != "img" {
            data["hint"] = json!(format!("the image came from a <{}> element", info.tag));
        }
        Ok(data)
    })
}

/// The reply of `image_info.js`'s `fetch` op.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Fetched {
    base64: String,
    content_type: String,
}

/// Fetches `url` from inside the element's frame (credentials included), within 60 s.
async fn fetch_in_page(
    found: &target::Target,
    url: &str,
) -> Result<(Vec<u8>, Option<String>), CommandError> {
    let call = found.tab.call_probe::<Fetched>(
        &found.frame,
        js::IMAGE_INFO_JS,
        json!({"op": "fetch", "url": url, "maxBytes": MAX_IMAGE_BYTES}),
    );
    let got = tokio::time::timeout(Duration::from_secs(60), call)
        .await
        .map_err(|_| CommandError::failed("the in-page fetch took longer than 60 s"))??;
    let bytes = crate::encoding::decode_base64(&got.base64)
        .ok_or_else(|| CommandError::failed("the in-page fetch came back garbled"))?;
    Ok((
        bytes,
        (!got.content_type.is_empty()).then_some(got.content_type),
    ))
}

/// The bytes and type of a `data:` URL (base64 or percent-free plain), `None` for other URLs.
fn decode_data_url(url: &str) -> Option<(Vec<u8>, Option<String>)> {
    let rest = url.strip_prefix("data:")?;
    let (meta, payload) = rest.split_once(',')?;
    let (ctype, base64) = match meta.strip_suffix(";base64") {
        Some(t) => (t, true),
        None => (meta, false),
    };
    let bytes = if base64 {
        crate::encoding::decode_base64(payload)?
    } else {
        payload.as_bytes().to_vec()
    };
    Some((bytes, (!ctype.is_empty()).then(|| ctype.to_string())))
}

// ---- OCR ----

/// Tesseract's language for a catalogue language (`zh-Hans-CN` -> `chi_sim+eng`, `en-US` ->
/// `eng`); Tesseract names (`eng`, `chi_sim`, `eng+chi_sim`) pass through. `Err` names what
/// is not known.
pub fn tesseract_language(language: &str) -> Result<String, String> {
    let l = language.trim();
    let tess = |s: &str| {
        !s.is_empty()
            && s.split('+').all(|part| {
                part.len() >= 3 && part.chars().all(|c| c.is_ascii_lowercase() || c == '_')
            })
    };
    if tess(l) {
        return Ok(l.to_string());
    }
    let lower = l.to_ascii_lowercase().replace('_', "-");
    let primary = lower.split('-').next().unwrap_or_default();
    let mapped = match primary {
        "zh" if lower.contains("hant") || lower.ends_with("-tw") || lower.ends_with("-hk") => {
            "chi_tra+eng"
        }
        "zh" => "chi_sim+eng",
        "en" => "eng",
        "ja" => "jpn",
        "ko" => "kor",
        "de" => "deu",
        "fr" => "fra",
        "es" => "spa",
        "ru" => "rus",
        "it" => "ita",
        "pt" => "por",
        _ => return Err(format!("unknown OCR language `{language}`")),
    };
    Ok(mapped.to_string())
}

/// The Debian package holding Tesseract's data for `lang` (`chi_sim` -> `tesseract-ocr-chi-sim`).
fn language_package(lang: &str) -> String {
    format!("tesseract-ocr-{}", lang.replace('_', "-"))
}

/// Reads the text of the image at `path` with the `tesseract` CLI in `language` (a catalogue
/// or Tesseract name). Answers `{ok, text, lineCount, engine, ms, language, tesseractLanguage}`
/// or `{ok:false, error, engineMissing?, exitCode?, ocrSupported, engineHint}`; never an `Err`.
pub async fn ocr_file(path: &Path, language: &str) -> Value {
    let started = Instant::now();
    let ms = || started.elapsed().as_millis() as u64;
    let hint = "apt-get install tesseract-ocr tesseract-ocr-eng tesseract-ocr-chi-sim";
    let lang = match tesseract_language(language) {
        Ok(l) => l,
        Err(e) => {
            return json!({"ok": false, "engine": "command", "error": e, "language": language,
                          "ocrSupported": true, "engineHint": "languages: zh-Hans-CN, en-US, or Tesseract names such as eng, chi_sim", "ms": ms()})
        }
    };
    let fail = |error: String, extra: Value| {
        let mut v = json!({"ok": false, "engine": "command", "error": error, "language": language,
                           "tesseractLanguage": lang, "ocrSupported": false, "engineHint": hint, "ms": ms()});
        if let (Value::Object(m), Value::Object(e)) = (&mut v, extra) {
            m.extend(e);
        }
        v
    };
    // Page segmentation 3 (automatic) reads pages; a tight crop of one element (no margin
    // around the text) reads as an empty page that way, so an empty answer is read again as
    // one uniform block (6).
    let mut last = None;
    for psm in ["3", "6"] {
        let left = OCR_TIMEOUT.saturating_sub(started.elapsed());
        let out = match run_tesseract(path, &lang, psm, left).await {
            Ok(out) => out,
            Err(Spawn::Timeout) => {
                return fail(
                    format!("tesseract took longer than {} s", OCR_TIMEOUT.as_secs()),
                    json!({}),
                )
            }
            Err(Spawn::Missing) => {
                return fail(
                    "OCR needs Tesseract, which is not installed: install the Debian package tesseract-ocr (and tesseract-ocr-eng, tesseract-ocr-chi-sim for English and Simplified Chinese)".into(),
                    json!({"engineMissing": true}),
                )
            }
            Err(Spawn::Other(e)) => return fail(format!("cannot run tesseract: {e}"), json!({})),
        };
        let empty = out.status.success() && String::from_utf8_lossy(&out.stdout).trim().is_empty();
        last = Some((out, psm));
        if !empty {
            break;
        }
    }
    let Some((out, psm)) = last else {
        return fail("tesseract did not run".into(), json!({}));
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        let missing: Vec<String> = lang
            .split('+')
            .filter(|l| {
                stderr.contains(&format!("{l}.traineddata"))
                    || stderr.contains("Failed loading language")
            })
            .map(language_package)
            .collect();
        let error = if stderr.contains("Failed loading language") || !missing.is_empty() {
            format!(
                "Tesseract has no data for `{lang}`: install the Debian package(s) {}",
                missing.join(", ")
            )
        } else {
            format!(
                "tesseract failed: {}",
                stderr.lines().last().unwrap_or("no message").trim()
            )
        };
        return fail(
            error,
            json!({"exitCode": out.status.code(), "engineMissing": !missing.is_empty()}),
        );
    }
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let line_count = text.lines().filter(|l| !l.trim().is_empty()).count();
    json!({"ok": true, "text": text, "lineCount": line_count, "engine": "command",
           "language": language, "tesseractLanguage": lang, "psm": psm, "ms": ms()})
}

/// Why tesseract did not answer.
enum Spawn {
    Timeout,
    Missing,
    Other(std::io::Error),
}

/// One run of `tesseract <path> stdout -l <lang> --psm <psm>`, killed after `within`.
async fn run_tesseract(
    path: &Path,
    lang: &str,
    psm: &str,
    within: Duration,
) -> Result<std::process::Output, Spawn> {
    let mut cmd = tokio::process::Command::new("tesseract");
    cmd.arg(path)
        .arg("stdout")
        .arg("-l")
        .arg(lang)
        .arg("--psm")
        .arg(psm)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    match tokio::time::timeout(within, cmd.output()).await {
        Err(_) => Err(Spawn::Timeout),
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => Err(Spawn::Missing),
        Ok(Err(e)) => Err(Spawn::Other(e)),
        Ok(Ok(out)) => Ok(out),
    }
}

/// Where `ocr_image`'s image comes from.
enum OcrSource {
    /// A file path as given (what the door lets it read: `door.rs`).
    File(String),
    Element(Locator),
}

fn ocr_image(p: &mut Params) -> Prepared<Cx> {
    let path = p.str_opt("path")?;
    let index = p.int_opt("index")?;
    let selector = p.str_opt("selector")?;
    let frame = p.str_opt("frame")?;
    let language = p
        .str_opt("language")?
        .unwrap_or_else(|| "zh-Hans-CN".into());
    if let Err(e) = tesseract_language(&language) {
        return Err(CommandError::invalid(
            "language",
            format!(
                "param `language`: {e}; use zh-Hans-CN, en-US or a Tesseract name (eng, chi_sim)"
            ),
        ));
    }
    let source = match (path, index, selector) {
        (Some(raw), _, _) => OcrSource::File(raw),
        (None, Some(i), _) => OcrSource::Element(Locator::Index(index_value(i)?)),
        (None, None, Some(css)) => OcrSource::Element(Locator::Selector {
            css,
            nth: None,
            frame,
            pick: target::Pick::Visible,
            strict: false,
        }),
        (None, None, None) => {
            return Err(CommandError::invalid(
                "path",
                "needs path, index or selector: the image to read",
            ))
        }
    };
    run(move |cx: Cx| async move {
        let (image, url, target) = match source {
            OcrSource::File(raw) => {
                // Relative by the door's rule (the seed's: the working directory), then read
                // only where the door may read.
                let path = cx.trust.absolute(Path::new(&raw)).unwrap_or_else(|| {
                    std::path::absolute(normalise(Path::new(&raw)))
                        .unwrap_or_else(|_| PathBuf::from(&raw))
                });
                let path = cx.trust.read("path", &path).await?;
                if !tokio::fs::metadata(&path).await.is_ok_and(|m| m.is_file()) {
                    return Err(CommandError::invalid(
                        "path",
                        format!("param `path`: no image file at `{raw}`"),
                    ));
                }
                let url = match &cx.task {
                    Some(task) => data_url(&cx.engine, task, &path).await,
                    None => None,
                };
                (path.clone(), url, format!("path={}", path.display()))
            }
            OcrSource::Element(locator) => {
                let Some(task) = cx.task.clone() else {
                    return Err(CommandError::invalid(
                        "id",
                        "reading an element needs a task (id); a path does not",
                    ));
                };
                let (shot, _) =
                    element_shot(&task, &locator, Instant::now() + OCR_SHOT_BUDGET).await?;
                let (path, url) = out_file(&cx.engine, &task, None, "shot-", ".png").await?;
                write_file(&cx.engine, &task, &path, &shot.png).await?;
                (path, url, target_text(&locator))
            }
        };
        let mut data = ocr_file(&image, &language).await;
        data["target"] = json!(target);
        data["imagePath"] = json!(std::path::absolute(&image)
            .unwrap_or(image)
            .display()
            .to_string());
        if let Some(url) = url {
            data["imageUrl"] = json!(url);
        }
        Ok(data)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn languages_map_to_tesseract_names() {
        assert_eq!(tesseract_language("zh-Hans-CN").unwrap(), "chi_sim+eng");
        assert_eq!(tesseract_language("zh-CN").unwrap(), "chi_sim+eng");
        assert_eq!(tesseract_language("zh-Hant-TW").unwrap(), "chi_tra+eng");
        assert_eq!(tesseract_language("en-US").unwrap(), "eng");
        assert_eq!(tesseract_language("en").unwrap(), "eng");
        assert_eq!(tesseract_language("eng+chi_sim").unwrap(), "eng+chi_sim");
        assert!(tesseract_language("xx-YY").is_err());
        assert!(tesseract_language("").is_err());
        assert_eq!(language_package("chi_sim"), "tesseract-ocr-chi-sim");
    }

    #[test]
    fn pdf_pages_count_page_objects_not_the_tree() {
        let pdf = b"<< /Type /Pages /Count 2 >> << /Type /Page >> << /Type/Page /X 1 >>";
        assert_eq!(pdf_pages(pdf), 2);
    }

    #[test]
    fn png_size_reads_ihdr_and_names_are_sanitised() {
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        png.extend_from_slice(&[0, 0, 1, 0, 0, 0, 0, 200]);
        assert_eq!(png_size(&png), Some((256, 200)));
        assert_eq!(png_size(b"GIF89a"), None);
        assert_eq!(sanitise("../a b.png").as_deref(), Some("a_b.png"));
        assert_eq!(sanitise("..."), None);
        assert_eq!(image_ext(Some("image/png"), "x"), ".png");
        assert_eq!(image_ext(None, "/a/b.JPEG?x=1"), ".jpg");
    }
}
