#pragma once
/// @file
/// @brief Devices and clusters: the DeviceModel concept and traits, shipped presets, runtime device
/// descriptions, clusters of devices and links, and cluster spec strings.

#include <goopt/device/cluster.hpp>
#include <goopt/device/cluster_spec.hpp>
#include <goopt/device/concepts.hpp>
#include <goopt/device/device_spec.hpp>
#include <goopt/device/preset.hpp>
