//! What the script hosts (`moonpilot run`, each run of `moonpilot watch`) do to record a run
//! (`runs.rs`) and write its report: begin the record, tag the engine's trace lines with the
//! run's id and keep what the script prints, then end the record and write the page.

use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;

use super::{end_run, ReportError, Written};
use crate::lua::LuaHost;
use crate::runs::{Output, RunRecord, RunStatus};

/// Where a host records its runs (the state directory), and where it writes each run's report
/// (none: no report; an empty path: `report.html` in the run's own directory).
#[derive(Debug, Clone)]
pub struct Recording {
    /// The state directory (`runs/` goes under it).
    pub state: PathBuf,
    /// The report's path.
    pub report: Option<PathBuf>,
}

/// A run being recorded.
pub struct Run {
    record: RunRecord,
    /// Its directory; none when it could not be made (said once on stderr).
    dir: Option<PathBuf>,
    output: Rc<RefCell<Output>>,
    report: Option<PathBuf>,
}

impl Run {
    fn new(recording: Recording, record: RunRecord, begun: std::io::Result<PathBuf>) -> Run {
        let dir = match begun {
            Ok(dir) => Some(dir),
            Err(e) => {
                eprintln!(
                    "moonpilot: cannot record the run in {}: {e}",
                    crate::runs::runs_dir(&recording.state).display()
                );
                None
            }
        };
        Run {
            record,
            dir,
            output: Rc::default(),
            report: recording.report,
        }
    }

    /// Begins recording `record` (blocking: before the runtime starts).
    pub fn begin(recording: Recording, record: RunRecord) -> Run {
        let begun = record.begin(&recording.state);
        Run::new(recording, record, begun)
    }

    /// [`Run::begin`] from inside the runtime (the file work on the blocking pool).
    pub async fn begin_async(recording: Recording, record: RunRecord) -> Run {
        let (copy, state) = (record.clone(), recording.state.clone());
        let begun = tokio::task::spawn_blocking(move || copy.begin(&state))
            .await
            .unwrap_or_else(|e| Err(std::io::Error::other(e)));
        Run::new(recording, record, begun)
    }

    /// Wires `host` to the run: the engine's trace lines carry the run's id from now on, and
    /// what the script prints is kept (and still printed).
    pub fn attach(&self, host: &LuaHost) -> mlua::Result<()> {
        if self.dir.is_none() {
            return Ok(());
        }
        if let Some(executor) = host.executor() {
            executor.engine().set_trace_run(Some(&self.record.id));
        }
        let output = self.output.clone();
        host.record_print(move |line| output.borrow_mut().push(line))
    }

    /// Ends the record (how the run ended, what it printed) and writes the report when one was
    /// asked for; says where on stderr. Blocking.
    pub fn end(self, status: RunStatus, exit_code: Option<u8>, error: Option<&str>) {
        let output = self.output.borrow().clone();
        finish(
            self.record,
            self.dir,
            (status, exit_code, error.map(str::to_string)),
            output,
            self.report,
        );
    }

    /// [`Run::end`] from inside the runtime (on the blocking pool).
    pub async fn end_async(self, status: RunStatus, error: Option<String>) {
        let output = self.output.borrow().clone();
        let (record, dir, report) = (self.record, self.dir, self.report);
        let _ = tokio::task::spawn_blocking(move || {
            finish(record, dir, (status, None, error), output, report)
        })
        .await;
    }
}

fn finish(
    mut record: RunRecord,
    dir: Option<PathBuf>,
    (status, exit_code, error): (RunStatus, Option<u8>, Option<String>),
    output: Output,
    report: Option<PathBuf>,
) {
    let Some(dir) = dir else { return };
    let out = report.map(|p| {
        if p.as_os_str().is_empty() {
            dir.join("report.html")
        } else {
            p
        }
    });
    let started = std::time::Instant::now();
    let written: Result<Option<Written>, ReportError> = end_run(
        &mut record,
        &dir,
        (status, exit_code, error.as_deref()),
        &output,
        out.as_deref(),
    );
    match written {
        Ok(Some(w)) => eprintln!("moonpilot: {}", w.said(started.elapsed())),
        Ok(None) => {}
        Err(e) => eprintln!("moonpilot: {e}"),
    }
}
