//! `expect(page):to_have_screenshot{name=…}`: the page (or an element) against a baseline PNG
//! under `__screenshots__/<test file>/` beside the test file. A missing baseline is written and
//! the assertion fails (unless `--update-snapshots`, which writes every baseline it reaches).
//! Two pixels differ when a channel differs by more than [`CHANNEL_TOLERANCE`] (anti-aliasing
//! noise passes); the assertion holds when the share of differing pixels is at most
//! `maxDiffPixelRatio`. The screenshot is taken again until it holds or the timeout passes (a
//! page still settling); on failure the last screenshot and a diff image (differing pixels red
//! over a faded copy) are kept in the test's output directory.

use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::browser::task::TaskId;
use crate::encoding::decode_base64;
use crate::executor::Executor;

/// The largest difference of one channel (0–255) that still counts as the same pixel.
pub const CHANNEL_TOLERANCE: u8 = 24;

/// Where the baselines of `file` live: `__screenshots__/<file name>/` beside it.
pub fn baseline_dir(file: &Path) -> PathBuf {
    let dir = file.parent().unwrap_or(Path::new("."));
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    dir.join("__screenshots__").join(name)
}

/// One comparison asked.
pub struct Check<'a> {
    /// The baseline's name (`<name>.png`).
    pub name: &'a str,
    /// The element to capture (a target table with `selector` or `index`); the viewport when
    /// `None`.
    pub target: Option<&'a Value>,
    /// The share of pixels that may differ (0 to 1).
    pub max_diff_ratio: f64,
    /// How long screenshots are taken again while they differ.
    pub timeout: Duration,
    /// Where the baselines are.
    pub baseline_dir: &'a Path,
    /// Where the last screenshot and the diff go on failure.
    pub out_dir: &'a Path,
    /// Write the baseline instead of comparing (`--update-snapshots`).
    pub update: bool,
}

/// Its answer.
pub struct Checked {
    /// It held.
    pub ok: bool,
    /// Why not (or what was written).
    pub message: String,
    /// The baseline's path.
    pub expected: Option<String>,
    /// The last screenshot's path.
    pub actual: Option<String>,
    /// Images kept for the report (the actual screenshot, the diff).
    pub images: Vec<PathBuf>,
}

impl Checked {
    fn failed(message: String) -> Checked {
        Checked {
            ok: false,
            message,
            expected: None,
            actual: None,
            images: Vec::new(),
        }
    }
}

/// A decoded image: width, height, RGBA bytes.
struct Rgba {
    w: u32,
    h: u32,
    px: Vec<u8>,
}

fn decode(png_bytes: &[u8]) -> Result<Rgba, String> {
    let mut decoder = png::Decoder::new(Cursor::new(png_bytes));
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().map_err(|e| e.to_string())?;
    let size = reader
        .output_buffer_size()
        .ok_or_else(|| "an image too large to decode".to_string())?;
    let mut buf = vec![0; size];
    let info = reader.next_frame(&mut buf).map_err(|e| e.to_string())?;
    buf.truncate(info.buffer_size());
    let channels = info.color_type.samples();
    let px = match channels {
        4 => buf,
        3 => buf
            .chunks_exact(3)
            .flat_map(|c| [c[0], c[1], c[2], 255])
            .collect(),
        2 => buf
            .chunks_exact(2)
            .flat_map(|c| [c[0], c[0], c[0], c[1]])
            .collect(),
        _ => buf.iter().flat_map(|&g| [g, g, g, 255]).collect(),
    };
    Ok(Rgba {
        w: info.width,
        h: info.height,
        px,
    })
}

fn encode(img: &Rgba) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut bytes, img.w, img.h);
    encoder.set_color(png::ColorType::Rgba);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(|e| e.to_string())?;
    writer
        .write_image_data(&img.px)
        .map_err(|e| e.to_string())?;
    writer.finish().map_err(|e| e.to_string())?;
    Ok(bytes)
}

/// How many pixels differ, and the diff image.
fn compare(a: &Rgba, b: &Rgba) -> (u64, Rgba) {
    let mut diff = Vec::with_capacity(a.px.len());
    let mut n = 0;
    for (pa, pb) in a.px.chunks_exact(4).zip(b.px.chunks_exact(4)) {
        let differs = pa
            .iter()
            .zip(pb)
            .any(|(x, y)| x.abs_diff(*y) > CHANNEL_TOLERANCE);
        if differs {
            n += 1;
            diff.extend_from_slice(&[255, 0, 0, 255]);
        } else {
            let grey = ((u32::from(pa[0]) + u32::from(pa[1]) + u32::from(pa[2])) / 3) as u8;
            let faded = 255 - (255 - grey) / 4;
            diff.extend_from_slice(&[faded, faded, faded, 255]);
        }
    }
    (
        n,
        Rgba {
            w: a.w,
            h: a.h,
            px: diff,
        },
    )
}

/// A file name made of `name` (letters, digits, `-`, `_`, `.` kept).
pub fn file_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let cleaned = cleaned.trim_matches('.').to_string();
    if cleaned.is_empty() {
        "screenshot".to_string()
    } else {
        cleaned
    }
}

async fn shoot(
    executor: &Executor,
    task: TaskId,
    target: Option<&Value>,
) -> Result<Vec<u8>, String> {
    let receipt = match target {
        Some(t) => {
            let mut params = json!({"inline": true});
            for k in ["selector", "index", "frame"] {
                if !t[k].is_null() {
                    params[k] = t[k].clone();
                }
            }
            if params.get("selector").is_none() && params.get("index").is_none() {
                return Err(
                    "an element screenshot takes a selector or an index as its target".into(),
                );
            }
            executor
                .execute(Some(task), "get_element_screenshot", params)
                .await
        }
        None => {
            executor
                .execute(Some(task), "screenshot", json!({"inline": true}))
                .await
        }
    };
    if !receipt.ok {
        return Err(receipt
            .msg
            .unwrap_or_else(|| "the screenshot failed".into()));
    }
    let b64 = receipt.data["base64"]
        .as_str()
        .ok_or_else(|| "the screenshot came without its image".to_string())?;
    decode_base64(b64).ok_or_else(|| "the screenshot's base64 does not decode".to_string())
}

/// Takes the screenshot and compares it (see the module's doc).
pub async fn check(executor: &Executor, task: TaskId, c: &Check<'_>) -> Checked {
    let baseline = c.baseline_dir.join(format!("{}.png", file_name(c.name)));
    let shown = baseline.display().to_string();
    let started = Instant::now();
    let write_baseline = |bytes: &[u8]| -> Result<(), String> {
        std::fs::create_dir_all(c.baseline_dir)
            .and_then(|()| std::fs::write(&baseline, bytes))
            .map_err(|e| format!("cannot write the baseline {shown}: {e}"))
    };
    if c.update || !baseline.is_file() {
        let bytes = match shoot(executor, task, c.target).await {
            Ok(b) => b,
            Err(e) => return Checked::failed(e),
        };
        if let Err(e) = write_baseline(&bytes) {
            return Checked::failed(e);
        }
        if c.update {
            return Checked {
                ok: true,
                message: format!("baseline written: {shown}"),
                expected: None,
                actual: None,
                images: Vec::new(),
            };
        }
        return Checked::failed(format!(
            "no baseline yet: written to {shown}; check it and run again (or pass --update-snapshots)"
        ));
    }
    let expected = match std::fs::read(&baseline)
        .map_err(|e| e.to_string())
        .and_then(|b| decode(&b))
    {
        Ok(img) => img,
        Err(e) => return Checked::failed(format!("the baseline {shown} is unreadable: {e}")),
    };
    let mut last: Option<(Vec<u8>, Rgba, u64, Option<Rgba>)>;
    loop {
        match shoot(executor, task, c.target).await {
            Ok(bytes) => match decode(&bytes) {
                Ok(actual) => {
                    if (actual.w, actual.h) != (expected.w, expected.h) {
                        last = Some((bytes, actual, u64::MAX, None));
                    } else {
                        let (n, diff) = compare(&actual, &expected);
                        let total = u64::from(actual.w) * u64::from(actual.h);
                        if (n as f64) <= c.max_diff_ratio * total as f64 {
                            return Checked {
                                ok: true,
                                message: String::new(),
                                expected: None,
                                actual: None,
                                images: Vec::new(),
                            };
                        }
                        last = Some((bytes, actual, n, Some(diff)));
                    }
                }
                Err(e) => return Checked::failed(format!("the screenshot is unreadable: {e}")),
            },
            Err(e) => return Checked::failed(e),
        }
        if started.elapsed() >= c.timeout {
            break;
        }
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    let Some((bytes, actual, n, diff)) = last else {
        return Checked::failed("no screenshot was taken".into());
    };
    let mut images = Vec::new();
    let stem = file_name(c.name);
    if std::fs::create_dir_all(c.out_dir).is_ok() {
        let actual_path = c.out_dir.join(format!("{stem}-actual.png"));
        if std::fs::write(&actual_path, &bytes).is_ok() {
            images.push(actual_path);
        }
        if let Some(diff) = diff.as_ref().and_then(|d| encode(d).ok()) {
            let diff_path = c.out_dir.join(format!("{stem}-diff.png"));
            if std::fs::write(&diff_path, diff).is_ok() {
                images.push(diff_path);
            }
        }
    }
    let total = u64::from(actual.w) * u64::from(actual.h);
    let message = if n == u64::MAX {
        format!(
            "the screenshot is {}x{}, the baseline {shown} is {}x{}",
            actual.w, actual.h, expected.w, expected.h
        )
    } else {
        format!(
            "{n} of {total} pixels ({:.3}%) differ from {shown} after {:.1} s (at most {:.3}% may)",
            n as f64 * 100.0 / total as f64,
            started.elapsed().as_secs_f64(),
            c.max_diff_ratio * 100.0
        )
    };
    Checked {
        ok: false,
        message,
        expected: Some(shown),
        actual: images.first().map(|p| p.display().to_string()),
        images,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn img(w: u32, h: u32, f: impl Fn(u32, u32) -> [u8; 4]) -> Rgba {
        let px = (0..h)
            .flat_map(|y| (0..w).map(move |x| (x, y)))
            .flat_map(|(x, y)| f(x, y))
            .collect();
        Rgba { w, h, px }
    }

    #[test]
    fn pixels_differ_beyond_the_tolerance_only() {
        let a = img(10, 10, |_, _| [100, 100, 100, 255]);
        let b = img(10, 10, |x, _| {
            if x == 0 {
                [200, 100, 100, 255]
            } else {
                [110, 95, 100, 255]
            }
        });
        let (n, diff) = compare(&a, &b);
        assert_eq!(n, 10, "one column differs, the rest is noise");
        assert_eq!(&diff.px[..4], &[255, 0, 0, 255]);
        let round = decode(&encode(&diff).unwrap()).unwrap();
        assert_eq!((round.w, round.h), (10, 10));
        assert_eq!(round.px, diff.px);
    }

    #[test]
    fn names_become_file_names() {
        assert_eq!(file_name("home page/1"), "home-page-1");
        assert_eq!(file_name(".."), "screenshot");
        assert_eq!(file_name("logo.v2"), "logo.v2");
    }
}
