// goopt: optimize ML computation graphs from the command line. One subcommand per file; each
// declares its flags once (CLI11 builds the help and validates from the same declaration).
// Exit status: 0 success, 2 usage error (a flag CLI11 refuses), 1 bad input or failure, always with
// one line "goopt: error: ..." on stderr.
#include "cli.hpp"

#include <goopt/version.hpp>

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

int main(int argc, char** argv) {
    CLI::App app{
        "goopt: rewrite, place, schedule and fuse ML computation graphs, scored by one simulator.\n"
        "Run 'goopt <command> --help' for a command's flags.",
        "goopt"};
    app.require_subcommand(1, 1);
    app.set_version_flag("--version", std::string(goopt::version_string));
    std::vector<goopt::cli::command> commands;
    commands.push_back(goopt::cli::add_optimize_command(app));
    commands.push_back(goopt::cli::add_superopt_command(app));
    commands.push_back(goopt::cli::add_train_command(app));
    commands.push_back(goopt::cli::add_models_command(app));
    commands.push_back(goopt::cli::add_simulate_command(app));
    commands.push_back(goopt::cli::add_import_command(app));
    commands.push_back(goopt::cli::add_export_command(app));
    commands.push_back(goopt::cli::add_generate_rules_command(app));
    commands.push_back(goopt::cli::add_calibrate_command(app));
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        std::string where = "goopt";
        for (const auto& c : commands)
            if (c.app->parsed()) where += " " + c.app->get_name();
        std::fprintf(stderr, "goopt: error: %s (see '%s --help')\n", e.what(), where.c_str());
        return 2;
    }
    try {
        for (const auto& c : commands)
            if (c.app->parsed()) return c.run();
        return 2;  // unreachable: require_subcommand(1, 1)
    } catch (const std::exception& e) {
        std::fflush(stdout);
        std::fprintf(stderr, "goopt: error: %s\n", e.what());
        return 1;
    }
}
