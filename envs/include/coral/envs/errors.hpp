#pragma once
/// \file
/// Error texts of the envs layer. Each is a fmt format string; tests assert
/// them exactly. Config and flag errors are thrown as coral::config_error,
/// misuse of the API as coral::usage_error (see coral/core/error.hpp).

#include <string_view>

namespace coral::envs::errors {

/// No env registered under a name: name, comma-separated known names.
inline constexpr std::string_view unknown_env = "unknown env '{}' (known: {})";
/// An env registered twice: name.
inline constexpr std::string_view duplicate_env = "env '{}' is already registered";
/// A config key the env does not declare: env, key, comma-separated known keys.
inline constexpr std::string_view unknown_key = "env '{}': unknown config key '{}' (known: {})";
/// A config key given twice (`--env-arg k=1 --env-arg k=2`): env, key, the first value, the second.
inline constexpr std::string_view repeated_key = "env '{}': config key '{}' given twice ('{}', then '{}'); give it once";
/// A config value that does not parse or is out of range: env, key, value, what was expected.
inline constexpr std::string_view bad_config_value = "env '{}': config key '{}': invalid value '{}' (expected {})";
/// Keys that must agree with each other do not: env, key, explanation.
inline constexpr std::string_view inconsistent_config = "env '{}': config key '{}': {}";
/// An `--env-arg` that is not `key=value`: the argument.
inline constexpr std::string_view malformed_env_arg = "--env-arg: expected key=value, got '{}'";
/// An action (from `--actions`) outside the action space: the text, its position (from 1), the space.
inline constexpr std::string_view bad_action = "--actions: action '{}' (number {}) is outside the action space {}";
/// A space built with arguments that make no sense: the space kind, the reason.
inline constexpr std::string_view bad_space = "{}: {}";
/// A structured value that does not match its space: the space.
inline constexpr std::string_view value_mismatch = "value does not match the space {}";
/// A flat row of the wrong width: what, expected width, given width.
inline constexpr std::string_view row_width = "{}: row has {} elements, expected {}";
/// Envs in one slice or batch whose spaces differ from the batch's: env name, reason.
inline constexpr std::string_view batch_mismatch = "env '{}' does not fit the batch: {}";
/// A config read with the wrong type or an undeclared key: key, requested type.
inline constexpr std::string_view config_access = "env config: key '{}' is not a declared {} key";

/// An env's reset() threw: what it threw.
inline constexpr std::string_view reset_failed = "reset failed: {}";
/// An env returned a non-finite reward: the value.
inline constexpr std::string_view non_finite_reward = "returned a non-finite reward ({})";
/// An env wrote a non-finite observation: element index, value.
inline constexpr std::string_view non_finite_observation = "wrote a non-finite observation (element {} = {})";

/// An env whose declared action-mask width does not fit its action space: env, declared width, action space, the width it needs.
inline constexpr std::string_view mask_width =
    "env '{}' declares an action mask of {} bytes; its action space {} needs {} (one byte per discrete value)";
/// An env whose slot belongs to a team outside [0, team_count()): env, slot, team id, team count.
inline constexpr std::string_view team_out_of_range = "env '{}': slot {} has team id {}; the env has {} teams (ids from 0)";
/// An active row whose mask leaves an action component without a legal value: row, component.
inline constexpr std::string_view all_actions_masked = "masks every action of active row {} (action component {})";

/// A MuJoCo model file (the `model` key) that is missing, not a regular
/// file, unreadable or too large: env, file, why (a coral/core/input_file.hpp problem).
inline constexpr std::string_view mujoco_model_unreadable = "env '{}': config key 'model': cannot read '{}': {}";
/// A file a MuJoCo model names (an <include>, a mesh) that is there but not
/// a readable regular file: env, model file, line, the file named, why.
inline constexpr std::string_view mujoco_model_names_unreadable =
    "env '{}': MuJoCo model '{}', line {}: cannot read '{}': {}";
/// A MuJoCo model file that MuJoCo cannot load: env, file, MuJoCo's own message (on one line).
inline constexpr std::string_view mujoco_model_malformed = "env '{}': cannot load MuJoCo model '{}': {}";
/// A built-in model file found in none of the model directories: env, file name, the directories tried.
inline constexpr std::string_view mujoco_model_not_found =
    "env '{}': built-in MuJoCo model '{}' not found (looked in: {}); set CORAL_MODEL_DIR to the folder that holds it";
/// A MuJoCo model whose dimensions or names do not fit the task: env, file, what is wrong.
inline constexpr std::string_view mujoco_model_mismatch = "env '{}': MuJoCo model '{}' does not fit the task: {}";
/// A MuJoCo simulation that became unstable during a step or reset: what MuJoCo saw, simulation time.
inline constexpr std::string_view mujoco_unstable = "MuJoCo simulation became unstable: {} (time {:.4f} s)";
/// An error MuJoCo raised (its mju_error handler): MuJoCo's message.
inline constexpr std::string_view mujoco_error = "MuJoCo error: {}";
/// MuJoCo's offscreen renderer could not start (render() of a MuJoCo env): why.
inline constexpr std::string_view mujoco_render_unavailable = "MuJoCo cannot render offscreen: {}";

}  // namespace coral::envs::errors
