#pragma once
/// @file
/// @brief The error of a task whose every decision gives the same step on this graph, a type of its
/// own so that a caller running every task it has (`goopt optimize` without --tasks) can leave that
/// task out with its reason instead of failing the whole run.

#include <goopt/error.hpp>

namespace goopt::tasks {

/// @brief Raised by a task's constructor when the graph (and the placement it is given) leaves it
/// nothing to decide: no producer/consumer pair that can fuse, no device with two computing ops to
/// order, a reference step that takes no time. The input is valid; the question is empty. Asked for
/// by name, it is an error like any other (the message has goopt::error's one form); asked for as
/// part of "everything", the task is skipped and the reason reported.
class nothing_to_decide : public error {
public:
    using error::error;
};

}  // namespace goopt::tasks
