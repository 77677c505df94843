#pragma once
/// \file
/// The settings of the run that wrote a checkpoint, kept inside it (the
/// record `run_settings`), so that the checkpoint alone rebuilds the run's
/// env and network: `coral eval` and learners::load_policy() need nothing
/// else. A run writes the record into every checkpoint; a checkpoint of an
/// older coral has none, and those two refuse it by name
/// (errors::checkpoint_no_settings) while `--resume` still reads it (a
/// resumed run's flags say what it lacks, and its next checkpoint has it).
///
/// The record is a sequence of `key length u32 | key | value length u32 |
/// value`: `env-arg` (one per env arg, `key=value`), `hidden` (`64 64`;
/// empty: the default), `conv` (`16:3 32:3:2`; empty: the default; a
/// record without it is from before `--conv` and reads as `none`) and each
/// setting of the algorithm as option_field's to_text() writes it. The env,
/// algo and seed are the checkpoint's own records.

#include <string_view>
#include <vector>

#include "coral/training/checkpoint.hpp"
#include "coral/training/train_options.hpp"

namespace coral::training {

/// The name of the record.
inline constexpr std::string_view run_settings_record = "run_settings";

/// The record's bytes for a run of `o`: its env args, hidden widths,
/// convolutions and every setting of its algorithm (defaults filled in). Throws config_error
/// when `o.algo` is not registered.
[[nodiscard]] std::vector<char> encode_run_settings(const train_options& o);

/// The options of the run that wrote `c` (read from `file`): its env, env
/// args, seed, algo, hidden widths, convolutions and algorithm settings; everything else
/// at train_options' defaults. A setting this coral's algorithm no longer
/// declares is passed over. Throws checkpoint_error: errors::checkpoint_no_settings
/// when `c` has no run_settings record, errors::checkpoint_bad_record when
/// the record does not decode (a setting that does not read as its kind);
/// config_error (errors::bad_value) when its algorithm is not registered.
[[nodiscard]] train_options run_options_of(const checkpoint& c, std::string_view file);

}  // namespace coral::training
