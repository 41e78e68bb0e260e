#pragma once
/// @file
/// @brief The GO policy network on Eigen: layers with explicit backward passes, GraphSAGE,
/// segment-recurrent attention, feature modulation, heads, node features, the optimizers (Adam, SGD
/// with momentum, and the nn::Optimizer concept they model), save/load, and a guard that stops
/// training at the first NaN.

#include <goopt/nn/activations.hpp>
#include <goopt/nn/adam.hpp>
#include <goopt/nn/adjacency.hpp>
#include <goopt/nn/concepts.hpp>
#include <goopt/nn/feature_modulation.hpp>
#include <goopt/nn/go_policy.hpp>
#include <goopt/nn/gradient_check.hpp>
#include <goopt/nn/graph_sage.hpp>
#include <goopt/nn/heads.hpp>
#include <goopt/nn/layer_norm.hpp>
#include <goopt/nn/linear.hpp>
#include <goopt/nn/lstm.hpp>
#include <goopt/nn/node_features.hpp>
#include <goopt/nn/optimizer.hpp>
#include <goopt/nn/pair_head.hpp>
#include <goopt/nn/residual_block.hpp>
#include <goopt/nn/segment_attention.hpp>
#include <goopt/nn/serialization.hpp>
#include <goopt/nn/sgd.hpp>
#include <goopt/nn/training_guard.hpp>
#include <goopt/nn/types.hpp>
