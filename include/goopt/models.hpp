#pragma once
/// @file
/// @brief Benchmark graphs: TASO's and GO's workloads, the training-graph transform, the registry.

#include <goopt/models/amoebanet.hpp>
#include <goopt/models/bert.hpp>
#include <goopt/models/classifier_head.hpp>
#include <goopt/models/gnmt.hpp>
#include <goopt/models/gradient_rules.hpp>
#include <goopt/models/inception_v3.hpp>
#include <goopt/models/nasnet_a.hpp>
#include <goopt/models/nasrnn.hpp>
#include <goopt/models/resnet.hpp>
#include <goopt/models/rnnlm.hpp>
#include <goopt/models/squeezenet.hpp>
#include <goopt/models/training_graph.hpp>
#include <goopt/models/transformer_xl.hpp>
#include <goopt/models/wavenet.hpp>
#include <goopt/models/zoo.hpp>
