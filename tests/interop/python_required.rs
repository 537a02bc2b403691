//! The rule for tests that need Python: they skip when none is found, unless the test
//! command requires Python (`LODTENSOR_REQUIRE_PYTHON=1`), where they fail.

use std::path::PathBuf;
use std::process::{Command, Output};

use crate::common::{python_for_test, python_from};

#[test]
fn a_missing_python_skips_unless_required() {
    let python = PathBuf::from("/usr/bin/python3");
    assert_eq!(
        python_for_test(Some(python.clone()), true),
        Ok(Some(python.clone()))
    );
    assert_eq!(
        python_for_test(Some(python.clone()), false),
        Ok(Some(python))
    );
    assert_eq!(python_for_test(None, false), Ok(None));
    let why = python_for_test(None, true).unwrap_err();
    assert!(why.contains("LODTENSOR_REQUIRE_PYTHON=1"), "{why}");
}

#[test]
fn the_variable_wins_over_the_venv_and_empty_means_none() {
    let venv = Some(PathBuf::from(".venv/bin/python"));
    assert_eq!(
        python_from(Some("py".into()), venv.clone()),
        Some(PathBuf::from("py"))
    );
    assert_eq!(python_from(None, venv.clone()), venv);
    assert_eq!(python_from(Some("".into()), venv), None);
    assert_eq!(python_from(None, None), None);
}

/// Runs one of this binary's Python tests with no Python (`LODTENSOR_PYTHON` empty).
fn python_test_without_python(required: bool) -> Output {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args([
            "python_example::python_gets_the_same_batches",
            "--exact",
            "--nocapture",
        ])
        .env("LODTENSOR_PYTHON", "")
        .env_remove("LODTENSOR_REQUIRE_PYTHON");
    if required {
        command.env("LODTENSOR_REQUIRE_PYTHON", "1");
    }
    command.output().unwrap()
}

#[test]
fn a_python_test_fails_without_python_when_required() {
    let skipped = python_test_without_python(false);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&skipped.stdout),
        String::from_utf8_lossy(&skipped.stderr),
    );
    assert!(skipped.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("1 passed"), "{stdout}");
    assert!(stderr.contains("skipped: no Python"), "{stderr}");

    let failed = python_test_without_python(true);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&failed.stdout),
        String::from_utf8_lossy(&failed.stderr),
    );
    assert!(!failed.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("1 failed"), "{stdout}");
    assert!(
        format!("{stdout}{stderr}").contains("LODTENSOR_REQUIRE_PYTHON=1 but no Python"),
        "{stdout}\n{stderr}"
    );
}
