use clap::Parser;
use osmeter::{cli::Cli, commands, error};

fn main() {
    osmeter::system::limits::fit_allocator_to_address_space();
    osmeter::interrupt::catch_file_size_limit();
    osmeter::hand_down_document_kinds();
    let cli = Cli::parse();
    let code = match commands::dispatch(cli) {
        Ok(code) => code,
        Err(err) => {
            osmeter::console::note(format_args!("osmeter: error: {err:#}"));
            if past_file_size_limit(&err) {
                let why = osmeter::system::limits::file_too_large_writing("a file");
                osmeter::console::note(format_args!("osmeter: {why}"));
            }
            error::exit_code(&err)
        }
    };
    std::process::exit(code);
}

/// A write failed with EFBIG and the message does not yet name the file-size limit.
fn past_file_size_limit(err: &anyhow::Error) -> bool {
    let efbig = err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.raw_os_error() == Some(libc::EFBIG))
    }) || osmeter::interrupt::file_too_large();
    efbig && !format!("{err:#}").contains("RLIMIT_FSIZE")
}
