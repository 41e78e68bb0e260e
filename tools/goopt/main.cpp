// goopt: optimize ML computation graphs from the command line. One subcommand per file; each
// declares its flags once (CLI11 builds the help and validates from the same declaration).
// Exit status: 0 success, 2 usage error (a flag CLI11 refuses), 1 bad input or failure, always with
// one line "goopt: error: ..." on stderr.
#include "cli.hpp"

#include <goopt/version.hpp>
#if GOOPT_PROGRAM_HAS_MPI
#include <goopt/mpi.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string_view>
#include <system_error>
#endif

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#if GOOPT_PROGRAM_HAS_MPI
namespace {
/// Under mpirun: the run's ranks share PPO's samples and rule generation's work; rank 0 alone prints and writes results
/// (the other ranks' stdout goes nowhere, their output files into a scratch folder, their checkpoints nowhere:
/// rl::ppo); a rank that fails stops the run naming itself. Started directly, the program runs as a single process.
std::optional<goopt::mpi::session> mpi_world;
std::optional<goopt::mpi::sample_sharding> mpi_sharding;
std::optional<goopt::mpi::generation_sharding> mpi_generation;

/// Rank r > 0 writes its copies of the output files (-o/--out, --svg, --curve) into a folder of
/// its own, removed at exit: the flags stay valid (some are required), only rank 0's files remain.
std::filesystem::path scratch;
std::vector<std::string> rewritten;

std::vector<char*> start_ranks(int& argc, char**& argv) {
    if (!goopt::mpi::launched_by_mpirun()) return {argv, argv + argc};
    mpi_world.emplace(argc, argv);
    mpi_sharding.emplace(*mpi_world);
    mpi_generation.emplace(*mpi_world);
    goopt::cli::ranks() = {&*mpi_sharding, &*mpi_generation, [](bool mine) { return mpi_world->all(mine); }};
    std::vector<char*> args(argv, argv + argc);
    if (mpi_world->rank() == 0) return args;
    scratch = std::filesystem::temp_directory_path() /
              goopt::concat("goopt-rank", mpi_world->rank(), "-", static_cast<long>(::getpid()));
    std::filesystem::create_directories(scratch);
    std::atexit([] {
        std::error_code ignored;
        std::filesystem::remove_all(scratch, ignored);
    });
    rewritten.reserve(args.size());
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string_view a = args[i];
        for (std::string_view flag : {"-o", "--out", "--svg", "--curve"}) {
            const bool separate = a == flag && i + 1 < args.size();
            const bool joined = a.starts_with(flag) && a.size() > flag.size() && a[flag.size()] == '=';
            if (!separate && !joined) continue;
            const std::string value = separate ? args[i + 1] : std::string(a.substr(flag.size() + 1));
            const std::string moved = (scratch / std::filesystem::path(value).filename()).string();
            rewritten.push_back(separate ? moved : goopt::concat(flag, "=", moved));
            args[separate ? i + 1 : i] = rewritten.back().data();
            if (separate) ++i;
            break;
        }
    }
    if (!std::freopen("/dev/null", "w", stdout)) mpi_world->abort("cannot silence stdout");
    return args;
}
}  // namespace
#endif

int main(int argc, char** argv) {
#if GOOPT_PROGRAM_HAS_MPI
    std::vector<char*> args = start_ranks(argc, argv);
    argc = static_cast<int>(args.size());
    argv = args.data();
#endif
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
#if GOOPT_PROGRAM_HAS_MPI
        if (mpi_world) mpi_world->abort(e.what());  // the other ranks may wait in a collective call
#endif
        std::fflush(stdout);
        std::fprintf(stderr, "goopt: error: %s\n", e.what());
        return 1;
    }
}
