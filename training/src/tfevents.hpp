#pragma once
// Private: TensorBoard's event file format, the part of it coral writes and
// reads back on resume: TFRecord framing around `Event` protocol buffers,
// encoded by hand from the schema TensorBoard publishes
// (tensorboard/compat/proto/event.proto, summary.proto, tensor.proto):
//
//   record  = length (uint64 LE) | masked CRC-32C of length | data | masked CRC-32C of data
//   Event   = wall_time (1, double) | step (2, int64) | file_version (3, string) | summary (5, Summary)
//   Summary = value (1, repeated Value)
//   Value   = tag (1, string) | simple_value (2, float) | tensor (8, TensorProto) | metadata (9, SummaryMetadata)
//   SummaryMetadata = plugin_data (1, PluginData { plugin_name (1, string) })
//   TensorProto     = dtype (1, enum; DT_STRING = 7) | tensor_shape (2, empty: a scalar) | string_val (8, bytes)

#include <cstdint>
#include <istream>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace coral::training::detail::tfevents {

/// The file_version of the first Event of every file.
inline constexpr std::string_view file_version = "brain.Event:2";

/// A record longer than this is taken for damage (coral's are a few hundred bytes).
inline constexpr std::uint64_t max_record_bytes = std::uint64_t{1} << 26;

/// One scalar of a summary.
struct scalar {
  std::string_view tag;
  float value = 0;
};

/// `data` framed as one TFRecord.
[[nodiscard]] std::string frame(std::string_view data);

/// The Event that opens a file: its file_version.
[[nodiscard]] std::string version_event(double wall_time);

/// An Event at `step` whose summary holds one simple_value per scalar: what
/// TensorBoard's scalars dashboard draws.
[[nodiscard]] std::string scalars_event(double wall_time, std::int64_t step, std::span<const scalar> scalars);

/// An Event at `step` whose summary holds `text` (Markdown) under `tag` for
/// TensorBoard's text dashboard: a scalar string tensor with plugin "text".
[[nodiscard]] std::string text_event(double wall_time, std::int64_t step, std::string_view tag, std::string_view text);

/// What a resumed run needs to know of an Event it reads back.
struct event_kind {
  std::int64_t step = 0;
  bool opens_file = false;  ///< holds a file_version
  bool text = false;        ///< a summary value of the text plugin
};

/// The kind of the Event encoded in `data`; nullopt when `data` is not a
/// well-formed protocol buffer.
[[nodiscard]] std::optional<event_kind> inspect(std::string_view data);

/// Reads the next record of `in` into `data`. False at the end, and at a
/// record cut short (a write killed part way), one longer than
/// max_record_bytes, or one whose length or data fails its CRC: TensorBoard
/// stops reading a file there too, so nothing after it can be kept.
[[nodiscard]] bool read_record(std::istream& in, std::string& data);

}  // namespace coral::training::detail::tfevents
