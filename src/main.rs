use clap::Parser;
use osmeter::{cli::Cli, commands, error};

fn main() {
    osmeter::system::limits::fit_allocator_to_address_space();
    let cli = Cli::parse();
    let code = match commands::dispatch(cli) {
        Ok(code) => code,
        Err(err) => {
            osmeter::console::note(format_args!("osmeter: error: {err:#}"));
            error::exit_code(&err)
        }
    };
    std::process::exit(code);
}
