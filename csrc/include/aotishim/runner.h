// aotishim's C++ API for running AOTInductor-compiled models (built with
// aot_inductor.link_libtorch=False) in native programs. Errors throw
// aotishim::Error.
//
//   auto model = aotishim::Model::load("mlp.so");        // weights beside it
//   std::vector<aotishim::HostOutput> out = model->run_host({{x.data(), {12, 7}, {}, dtype}});
//   model->close();                                      // returns leaks, if any
//
//   aotishim::LoadOptions options;                       // a cuda model replaying
//   options.cuda_graphs = true;                          // CUDA graphs (LoadOptions)
//   auto fast = aotishim::Model::load("net.so", "", "cuda:0", options);
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "aotishim/c_shim.h"
#include "aotishim/error.h"
#include "aotishim/export.h"

namespace aotishim {

// The last-slot rule for a model's output handles. A compiled model may put
// one handle in several output slots, adjacent or not. This calls
// `convert(slot, handle)` for every slot in order (null slots included), then
// deletes each distinct non-null handle exactly once, at the last slot that
// holds it. If a conversion throws, later slots are not converted but every
// handle is still deleted once and the first error is rethrown. All slots are
// null on return.
AOTISHIM_API void release_outputs(AtenTensorHandle* slots, size_t count,
                                  const std::function<void(size_t, AtenTensorHandle)>& convert);

// An input in host memory, read during run_host (not retained afterwards).
struct HostInput {
  const void* data = nullptr;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;  // in elements, non-negative; empty: contiguous
  int32_t dtype = 0;             // an aoti_torch_dtype_*() code
  // Whether the model may write `data` in place (an input it mutates, in
  // writable memory). Then a packed cpu buffer is borrowed, and a copy (of a
  // strided buffer, or for another device) is written back into `data`, in
  // its strides, after a successful run. False: the model works on a copy and
  // `data` is only read.
  bool writable = false;
};

// An output copied to host memory, packed row-major.
struct HostOutput {
  bool defined = false;  // false when the model left this slot empty
  std::vector<int64_t> sizes;
  int32_t dtype = 0;
  std::vector<uint8_t> data;
};

// What a model library needs, read from its symbol table without loading it.
struct LibraryReport {
  bool is_model = false;                   // defines the container entry points
  std::vector<std::string> needed_shims;   // aoti_* functions it imports
  std::vector<std::string> missing_shims;  // ... that aotishim does not provide
};
AOTISHIM_API LibraryReport inspect_library(const std::string& so_path);

// Where Model::load looks for the weights blob of `so_path` when none is
// given, in order: <dir>/<stem>.weights.blob, <dir>/<stem>_weights.blob
// (the second is AOTInductor's own "<hash>.wrapper_weights.blob" naming).
AOTISHIM_API std::vector<std::string> default_weights_paths(const std::string& so_path);

// How Model::load prepares a model.
struct LoadOptions {
  // Record each input signature's run as a CUDA graph on its first call and
  // replay it on later calls (cuda models only; see runner/graph_runs.h):
  // the GPU runs the recorded kernels back to back, with none of the host
  // work between them. Inputs are copied into the recording's own tensors
  // and outputs are copies, so no output shares memory with another; runs
  // are serialized. A signature whose run cannot be recorded (it waits for
  // the device, as data-dependent output sizes do) runs as without.
  bool cuda_graphs = false;
  // cpu models: the constants borrow the weights blob mapped copy-on-write
  // (MAP_PRIVATE) instead of a copy the container makes of it, so the
  // weights take memory once, as file pages the kernel may share and
  // reclaim, paged in as runs read them. A write to a constant (by the
  // model, or through extract_constants_map) copies only the page it
  // touches; the file is never written. The mapping lives while the model
  // (or a view of its constants) does; a change to the file by another
  // writer shows through where no page was copied, and truncating it makes
  // later reads fail (SIGBUS): keep the file as it is while the model is
  // loaded. Other devices refuse it (their weights are uploaded).
  bool mmap_weights = false;
};

// One input signature of a model loaded with cuda_graphs (Model::graphs()).
struct GraphInfo {
  std::string inputs;     // "float32[1,3,224,224], int64[1]"
  bool recorded = false;  // false: runs without a graph, for `reason`
  std::string reason;
  uint64_t replays = 0;   // calls it served, the first included
};

// How Model::load_constants places the constants it is given (torch's
// load_constants flags).
struct ConstantLoadOptions {
  // Every loadable constant must be given (else InputError naming those left out).
  bool check_full_update = false;
  // Borrow the given tensors' memory instead of copying it: they must be in
  // the model's layout (its strides), and their memory stays alive while the
  // model holds them. Two models share one copy of weights this way.
  bool user_managed = false;
  // Load into the inactive buffer, while runs go on with the active one;
  // swap_constant_buffer() then switches every later run over at once.
  bool use_inactive = false;
};

class AOTISHIM_API Model {
 public:
  // Loads a compiled model for `device` ("cpu", "cuda:0", ...). Checks the
  // model's imported shims first (all missing names in one error), creates
  // its container in a scope of its own and feeds it the weights blob (the
  // file is validated against the size the model expects). Paths are made
  // absolute and canonical first ("m.so" is the file in the current
  // directory) and must be regular files. A library is loaded once per
  // content (SHA-256) and kept: later loads of the same bytes reuse it.
  // In a child forked after the parent ran CPU models under GNU OpenMP,
  // loading or running on the cpu throws instead of hanging.
  static std::unique_ptr<Model> load(const std::string& so_path,
                                     const std::string& weights_path = "",
                                     const std::string& device = "cpu");
  // The same, with options. cuda_graphs on a device that cannot record, or
  // for a model without the single-threaded run entry point, is an error.
  static std::unique_ptr<Model> load(const std::string& so_path, const std::string& weights_path,
                                     const std::string& device, const LoadOptions& options);
  ~Model();  // close(); leaks are logged
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  // Runs on handles. The inputs are consumed (deleted), also on failure; the
  // model owns them for the run (one handle may fill several slots). The
  // result has one handle per output slot, each distinct and owned by the
  // caller (in the caller's current scope); outputs that borrow memory (a
  // constant, an input) are copies, so they outlive the model.
  std::vector<AtenTensorHandle> run(const std::vector<AtenTensorHandle>& inputs);

  // Runs on host buffers and returns the outputs copied to the host. Only
  // inputs marked `writable` are ever written (see HostInput).
  std::vector<HostOutput> run_host(const std::vector<HostInput>& inputs);

  // Deletes the container, then empties the model's scope. Returns what was
  // left in it (leaks; empty for a well-behaved model). Idempotent: later
  // calls return an empty list. Other models are never touched. From the
  // moment it is called new runs are refused ("... is closed"); it waits
  // only for the runs already in flight. Refused (throws, the model stays
  // open) while views from extract_constants_map are alive.
  std::vector<std::string> close();
  bool closed() const;

  const std::string& path() const;  // absolute and canonical
  const std::string& weights_path() const;  // "" when the model has no weights
  const std::string& device() const;
  const std::vector<std::string>& input_names() const;
  const std::vector<std::string>& output_names() const;
  const std::vector<std::string>& constant_names() const;
  uint64_t scope() const;
  // Bytes of weights the model expects (0 when it has none or cannot say).
  uint64_t constants_blob_size() const;
  // Bytes of the weights blob mapped for the constants (mmap_weights), 0
  // without; and how many constants were copied out of it instead (those
  // the blob leaves unaligned for their dtype).
  uint64_t mapped_weights_bytes() const;
  size_t copied_mapped_constants() const;
  // Where each constant's data lay after loading (diagnostics and tests).
  const std::vector<const void*>& constant_data_ptrs() const;
  // Whether runs are recorded as CUDA graphs, and each signature seen so
  // far (empty without cuda_graphs).
  bool records_graphs() const;
  std::vector<GraphInfo> graphs() const;
  // ---- constants (torch's runner API) ----
  // The FQNs load_constants takes and extract_constants_map returns, in the
  // model's order (constants the model folds itself are not among them).
  std::vector<std::string> constant_fqns() const;
  // Loads constants by FQN (handles borrowed, not consumed). Each is checked
  // against the model's dtype, shape and device first (InputError naming
  // it; an unknown FQN too), so a failed load changes nothing. Without
  // user_managed the data is copied into the model's own memory (its scope),
  // in the model's layout. Loading the active buffer waits for the runs in
  // flight and holds new ones back; loading the inactive one runs beside
  // them. An empty inactive buffer gets the constants left out copied from
  // the active one. Not with cuda_graphs (the recordings hold the old
  // constants' addresses).
  void load_constants(const std::map<std::string, AtenTensorHandle>& constants,
                      const ConstantLoadOptions& options = {});
  // Handles (owned by the caller, in its current scope) viewing the model's
  // constants by FQN, without a copy. While any of them, or a model that
  // borrowed them, lives, that buffer cannot be freed and close() refuses
  // ("... still viewed ..."). Empty for an inactive buffer that holds nothing.
  std::map<std::string, AtenTensorHandle> extract_constants_map(bool use_inactive = false);
  // Makes the inactive buffer the active one, between runs (waits for those
  // in flight): every run sees either the old constants or the new ones.
  void swap_constant_buffer();
  // Frees the inactive buffer (after a swap: the old constants).
  void free_inactive_constant_buffer();

  // What close() reported (a copy: close() may run on another thread).
  std::vector<std::string> leaks() const;

 private:
  Model();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace aotishim
