//! The `lodtensor` binary: [`lodtensor_cli::run`] over the process's arguments.

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(lodtensor_cli::run(std::env::args_os()))
}
