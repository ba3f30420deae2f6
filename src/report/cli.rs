//! `moonpilot report [DIR] [--out FILE] [--open] [--json] [--task ID] [--images HOW]`: finds
//! what to report on (a run's directory, a state directory's newest run, or a task in the
//! state directory's trace), writes the page and says where. A bad DIR, no run found or a task
//! with no traced command is exit code 2 with the reason on stderr.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::{build, write, Images, ReportError, Subject};

/// The command's arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// A run's directory (`runs/<id>/` of the state directory), or a state directory (its
    /// newest run) [default: the newest run of the state directory].
    pub dir: Option<PathBuf>,
    /// Write it here [default: report.html in the run's directory; with --task,
    /// reports/task-<ID>.html of the state directory; with --json, standard output].
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Open the page in the desktop's browser once written ($BROWSER, else xdg-open).
    #[arg(long)]
    pub open: bool,
    /// The report's content as JSON instead of a page (no images).
    #[arg(long)]
    pub json: bool,
    /// Every traced command of one task instead of a run.
    #[arg(long, value_name = "ID", conflicts_with = "dir")]
    pub task: Option<String>,
    /// How screenshots are included: `embed` (scaled thumbnails inside the page), `beside`
    /// (thumbnails and the full screenshots in a folder next to it), `none`.
    #[arg(long, value_name = "HOW", default_value = "embed", value_parser = ["embed", "beside", "none"])]
    pub images: String,
    /// The state directory [default: $MOONPILOT_STATE_DIR, else $XDG_STATE_HOME/moonpilot,
    /// else ~/.local/state/moonpilot].
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
}

/// What to report on, and where the page goes by default.
fn subject(args: &Args) -> Result<(Subject, PathBuf), ReportError> {
    let state = crate::evidence::state_dir(args.state_dir.clone());
    let need_state = || {
        state.clone().ok_or_else(|| {
            ReportError::BadDir(
                "no state directory: pass DIR or --state-dir, or set MOONPILOT_STATE_DIR".into(),
            )
        })
    };
    if let Some(task) = &args.task {
        let state = need_state()?;
        if task.is_empty() || !task.bytes().all(|b| b.is_ascii_digit()) {
            return Err(ReportError::BadDir(format!(
                "`{task}` is no task id (task ids are numbers, as `start` answers them)"
            )));
        }
        let out = state.join("reports").join(format!("task-{task}.html"));
        return Ok((
            Subject::Task {
                task: task.clone(),
                trace_dir: crate::evidence::trace_dir(&state),
                data_dir: crate::evidence::data_dir(&state),
            },
            out,
        ));
    }
    let run = match &args.dir {
        Some(dir) if dir.join("run.json").is_file() => dir.clone(),
        Some(dir) if dir.is_dir() => crate::runs::newest(dir).ok_or_else(|| {
            ReportError::BadDir(format!(
                "{} is neither a run's directory (no run.json) nor a state directory with runs",
                dir.display()
            ))
        })?,
        Some(dir) => {
            return Err(ReportError::BadDir(format!(
                "no such directory: {}",
                dir.display()
            )))
        }
        None => {
            let state = need_state()?;
            crate::runs::newest(&state).ok_or(ReportError::NoRun(state))?
        }
    };
    let out = run.join("report.html");
    Ok((Subject::Run(run), out))
}

/// Runs `moonpilot report`.
pub fn run(args: Args) -> ExitCode {
    let (subject, default_out) = match subject(&args) {
        Ok(found) => found,
        Err(e) => {
            eprintln!("moonpilot: {e}");
            return ExitCode::from(2);
        }
    };
    let images = match args.images.as_str() {
        "beside" => Images::Beside,
        "none" => Images::Off,
        _ => Images::Embed,
    };
    if args.json && args.out.is_none() {
        return match build(&subject, &Images::Off, None) {
            Ok(report) => {
                use std::io::Write;
                let text = serde_json::to_string_pretty(&report).unwrap_or_default();
                let _ = writeln!(std::io::stdout(), "{text}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("moonpilot: {e}");
                ExitCode::from(2)
            }
        };
    }
    let out = args.out.clone().unwrap_or(default_out);
    let started = std::time::Instant::now();
    match write(&subject, &images, &out, args.json) {
        Ok(w) => {
            println!("moonpilot: {}", w.said(started.elapsed()));
            if args.open {
                open(&w.path);
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("moonpilot: {e}");
            ExitCode::from(2)
        }
    }
}

/// Opens `page` in the desktop's browser: `$BROWSER`, else `xdg-open`. A failure is said, not
/// fatal: the page is written.
fn open(page: &Path) {
    let opener = std::env::var("BROWSER")
        .ok()
        .filter(|b| !b.trim().is_empty())
        .unwrap_or_else(|| "xdg-open".into());
    let page = std::path::absolute(page).unwrap_or_else(|_| page.to_path_buf());
    if let Err(e) = std::process::Command::new(&opener)
        .arg(&page)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        eprintln!(
            "moonpilot: cannot open the report with `{opener}` ({e}); open {} yourself",
            page.display()
        );
    }
}
