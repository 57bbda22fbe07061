// aotishim::Model: one compiled model, its container and its scope.
#include <dlfcn.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <shared_mutex>

#include "aotishim/runner.h"
#include "aotishim/runtime.h"
#include "core/check_failures.h"
#include "core/device_type.h"
#include "core/error.h"
#include "core/device.h"
#include "runner/constant_buffers.h"
#include "runner/constant_map.h"
#include "runner/container_api.h"
#include "runner/cpu_team.h"
#include "runner/graph_runs.h"
#include "runner/handle_cleanup.h"
#include "runner/proxy_executor.h"
#include "runner/shared_library.h"
#include "runner/mapped_file.h"
#include "runner/mapped_weights.h"

namespace aotishim {

namespace fs = std::filesystem;
using runner::ContainerHandle;
using runner::consume;
using runner::delete_if_live;

struct Model::Impl {
  std::string path;
  std::string weights_path;
  std::string device;
  // The model's device: current on the calling thread during every call
  // into the model's code (which creates events and picks the default stream
  // by the current device), the caller's own restored afterwards.
  Device* target = nullptr;
  runner::SharedLibrary library;
  runner::ContainerApi api;
  ContainerHandle container = nullptr;
  runner::MappedFile weights;  // the model keeps a pointer into it
  // mmap_weights: the constants borrow this mapping (their tensors keep it
  // alive), handed to `constants` once it has described them.
  bool mmap_weights = false;
  uint64_t mapped_bytes = 0;
  size_t mapped_copied = 0;
  std::vector<std::pair<std::string, AtenTensorHandle>> mapped_views;
  // Ops the compiled code calls through the proxy executor (null when the
  // package lists none); it outlives the container.
  std::unique_ptr<runner::ProxyExecutor> proxy;
  uint64_t scope = 0;
  bool has_scope = false;
  uint64_t blob_size = 0;
  std::vector<std::string> input_names, output_names, constant_names, leaks;
  std::vector<const void*> constant_ptrs;
  // Runs share the model; close() waits for them and excludes new ones.
  mutable std::shared_mutex mutex;
  // Set first thing by close(), before it waits for `mutex`: runs check it
  // before and after taking their shared lock, so none is admitted once a
  // close has begun (a reader-preferring lock would otherwise let a stream
  // of new runs starve the close). Read without the lock: a caller holding
  // another lock (Python's GIL) must never wait for a close, whose teardown
  // may need that lock (dropping a Python array a tensor borrowed).
  std::atomic<bool> closed{false};
  bool torn_down = false;  // under `mutex`
  // Loaded with cuda_graphs (fixed at load): every run goes through
  // `graphs` (until close), serialized by graph_mutex, and the container
  // runs single-threaded.
  bool cuda_graphs = false;
  std::unique_ptr<runner::GraphRuns> graphs;
  mutable std::mutex graph_mutex;
  // The constants API: its calls are serialized by constants_mutex (taken
  // before `mutex`). Those that change what runs read take `mutex`
  // exclusively through `admission`, which new runs pass on their way in, so
  // a steady stream of runs cannot starve them.
  runner::ConstantBuffers constants;
  std::mutex constants_mutex;
  mutable std::mutex admission;

  std::shared_lock<std::shared_mutex> admit_run() const {
    std::lock_guard<std::mutex> gate(admission);
    return std::shared_lock<std::shared_mutex>(mutex);
  }
  std::unique_lock<std::shared_mutex> exclusive() const {
    std::lock_guard<std::mutex> gate(admission);
    return std::unique_lock<std::shared_mutex>(mutex);
  }
  void refuse_with_graphs(const char* what) const;

  void open_container();
  void feed_weights(const std::string& requested);
  void borrow_mapped_weights(const std::string& chosen);
  void record_constant_ptrs();
  std::vector<std::string> teardown();
  void require_open() const;
  // Runs the model on `inputs` (stolen) and returns its raw output slots:
  // through the recorded graphs when there are any, else the container.
  std::vector<AtenTensorHandle> invoke(std::vector<AtenTensorHandle>& inputs);
  std::vector<AtenTensorHandle> call_container(std::vector<AtenTensorHandle>& inputs);
};

namespace {

// Model code reads AOTI_RUNTIME_CHECK_INPUTS once per load to decide whether
// to check its inputs' dtype, sizes and strides; without the checks a wrong
// input reads out of bounds. Turned on unless the user chose otherwise.
void enable_model_input_checks() {
  static std::once_flag once;
  std::call_once(once, [] { setenv("AOTI_RUNTIME_CHECK_INPUTS", "1", /*overwrite=*/0); });
}

// The proxy executor for the package's extern-kernel nodes (torch's
// convention: <model>.json beside <model>.so), or null when there is no such
// file and the model calls no op through it.
std::unique_ptr<runner::ProxyExecutor> open_proxy_executor(const std::string& so_path,
                                                           const runner::ShimCheck& symbols,
                                                           Device& target) {
  const std::string nodes_path = runner::extern_nodes_path(so_path);
  std::error_code ec;
  const bool present = fs::is_regular_file(nodes_path, ec);
  const bool calls_proxy =
      std::find(symbols.needed.begin(), symbols.needed.end(),
                "aoti_torch_proxy_executor_call_function") != symbols.needed.end();
  if (!present) {
    if (!calls_proxy) return nullptr;
    throw Error("model '" + so_path + "' calls ops through the proxy executor, but its " +
                "extern-kernel nodes file '" + nodes_path + "' does not exist (it comes with " +
                "the model: the .json beside the .so in its .pt2)");
  }
  return std::make_unique<runner::ProxyExecutor>(runner::read_extern_nodes(nodes_path), target,
                                                 so_path);
}

bool is_cpu(const std::string& device) { return device.substr(0, device.find(':')) == "cpu"; }

std::string file_stem(const std::string& so_path) {
  fs::path p(so_path);
  return p.extension() == ".so" || p.extension() == ".dylib" ? p.stem().string()
                                                              : p.filename().string();
}

// Whether host strides describe a packed row-major layout. (The core's
// Tensor::is_contiguous answers this for tensors; the runner keeps to the
// public API, and these are not tensors yet.)
bool is_contiguous(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  if (strides.empty()) return true;
  if (strides.size() != sizes.size()) return false;
  // Empty: any strides will do, and the product below could overflow.
  for (int64_t s : sizes)
    if (s == 0) return true;
  int64_t expected = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    if (sizes[d] != 1 && strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

// A path resolved to an absolute, canonical one (symlinks, "..", the current
// directory), checked to be a regular file. The loader matches libraries by
// the string it is given and searches the library path for a bare name, so
// only a canonical path names one file, the one that was checked.
std::string canonical_file(const std::string& path, const std::string& what) {
  if (path.empty()) throw Error(what + " path is empty");
  std::error_code ec;
  const fs::path resolved = fs::canonical(path, ec);
  if (ec) throw Error(what + " '" + path + "' does not exist (" + ec.message() + ")");
  const fs::file_status status = fs::status(resolved, ec);
  if (ec) throw Error("cannot read " + what + " '" + path + "': " + ec.message());
  if (fs::is_directory(status)) throw Error(what + " '" + path + "' is a directory, not a file");
  if (!fs::is_regular_file(status)) {
    throw Error(what + " '" + path + "' is not a regular file (a device, pipe or socket)");
  }
  return resolved.string();
}

// fork() copies only the calling thread. A CPU model's kernels run on GNU
// OpenMP's worker threads, which the child does not get, while libgomp's
// state says they exist: the child's first parallel region waits for them
// forever. So when a process that has run CPU models with libgomp loaded
// forks, the child refuses to run CPU models, with an error saying why,
// instead of hanging. (A child forked before any run is fine: libgomp starts
// its threads on the first parallel region.)
std::atomic<bool> g_cpu_model_ran{false};
std::atomic<bool> g_openmp_threads_at_fork{false};
std::atomic<bool> g_forked_after_cpu_run{false};

bool gnu_openmp_loaded() {
  void* handle = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (handle) dlclose(handle);  // drops only the reference NOLOAD took
  return handle != nullptr;
}

void note_cpu_run() {
  static std::once_flag once;
  std::call_once(once, [] {
    pthread_atfork(
        // In the parent, before the fork: an ordinary context, dlopen is safe.
        [] { g_openmp_threads_at_fork.store(g_cpu_model_ran.load() && gnu_openmp_loaded()); },
        nullptr,
        [] {
          if (g_openmp_threads_at_fork.load()) g_forked_after_cpu_run.store(true);
        });
  });
  g_cpu_model_ran.store(true);
}

void require_not_forked(const std::string& path, const std::string& device) {
  if (!is_cpu(device) || !g_forked_after_cpu_run.load()) return;
  throw Error("model '" + path + "' cannot run on the cpu in this process: it was forked from a " +
              "process that had run cpu models, and their OpenMP worker threads do not survive " +
              "fork(). Load and run models in a process started fresh (multiprocessing's " +
              "'spawn' or 'forkserver' start method), or fork before running any model");
}

// The model takes (and deletes) the handle in each input slot, and nothing
// else may delete it while the model runs. So each input becomes a fresh
// handle in the model's own scope, sharing the caller's storage, and the
// caller's handle is consumed: one handle per slot even when the caller
// passed one tensor twice, and none that a cleanup of the caller's scope on
// another thread could reach mid-run.
std::vector<AtenTensorHandle> adopt_inputs(const std::vector<AtenTensorHandle>& inputs,
                                           uint64_t scope, const std::string& path) {
  std::vector<AtenTensorHandle> adopted(inputs.size(), nullptr);
  std::string error;
  {
    ScopeGuard guard(scope);
    for (size_t i = 0; i < inputs.size() && error.empty(); ++i) {
      clear_last_error();
      if (aoti_torch_new_tensor_handle(inputs[i], &adopted[i]) != 0) {
        error = "model '" + path + "': input " + std::to_string(i) + ": " + aotishim_last_error();
      }
    }
  }
  consume(inputs);
  if (!error.empty()) {
    consume(adopted);
    throw Error(error);
  }
  return adopted;
}

// The stream a model's kernels go to: the one aotishim's own work for the
// device goes to (copies, fallback ops, stream-ordered allocations, the
// waits DLPack exchange adds for producers and consumers), so all of it is
// one ordered queue. A null stream would put the kernels on the legacy
// default stream, ordered with ours only through that stream's implicit
// synchronization, which also serialises the whole device. Null for
// devices without streams; DLPack's 1 (the legacy default stream) is null.
void* run_stream(Device& device) {
  const intptr_t s = device.current_stream_handle();
  return s == 0 || s == 1 ? nullptr : reinterpret_cast<void*>(s);
}

}  // namespace

std::vector<std::string> default_weights_paths(const std::string& so_path) {
  const fs::path dir = fs::path(so_path).parent_path();
  const std::string stem = file_stem(so_path);
  return {(dir / (stem + ".weights.blob")).string(), (dir / (stem + "_weights.blob")).string()};
}

LibraryReport inspect_library(const std::string& so_path) {
  const runner::ShimCheck check = runner::check_model_symbols(so_path);
  LibraryReport report;
  report.is_model = check.entry_points_missing.empty();
  report.needed_shims = check.needed;
  report.missing_shims = check.missing;
  return report;
}

void Model::Impl::open_container() {
  ScopeGuard guard(scope);
  clear_last_error();
  target->take_runtime_error();  // an earlier caller's, not ours
  api.check(api.create(&container, 1, device.c_str(), nullptr),
            "creating the model container for device '" + device + "'");
  auto names = [&](auto count_fn, auto name_fn, const char* what) {
    std::vector<std::string> out;
    if (!count_fn || !name_fn) return out;
    size_t n = 0;
    api.check(count_fn(container, &n), std::string("reading the number of ") + what);
    for (size_t i = 0; i < n; ++i) {
      const char* name = nullptr;
      api.check(name_fn(container, i, &name), std::string("reading a name of the ") + what);
      out.emplace_back(name ? name : "");
    }
    return out;
  };
  input_names = names(api.num_inputs, api.input_name, "inputs");
  output_names = names(api.num_outputs, api.output_name, "outputs");
  constant_names = names(api.num_constants, api.constant_name, "constants");
}

void Model::Impl::feed_weights(const std::string& requested) {
  // The size query only works for models whose weights live outside the
  // code (package_constants_in_so=False); others carry their own.
  bool external = false;
  if (api.constants_blob_size) {
    ScopeGuard guard(scope);
    clear_last_error();
    external = api.constants_blob_size(container, &blob_size) == 0;
    if (!external) blob_size = 0;
  }
  if (requested.empty() && (!external || blob_size == 0 || constant_names.empty())) return;

  std::string chosen = requested.empty() ? "" : canonical_file(requested, "weights file");
  if (chosen.empty()) {
    const std::vector<std::string> candidates = default_weights_paths(path);
    const auto found = std::find_if(candidates.begin(), candidates.end(),
                                    [](const std::string& c) { return fs::is_regular_file(c); });
    if (found == candidates.end()) {
      throw Error("the weights of '" + path + "' were not found: looked for '" + candidates[0] +
                  "' and '" + candidates[1] + "' (pass the weights path explicitly)");
    }
    chosen = *found;
  }
  if (!api.update_constants_from_blob) {
    throw Error("'" + path + "' cannot take a weights blob (no AOTInductorModelUpdateConstantsFromBlob)");
  }
  // Opening it is the existence check: "cannot open weights '...': No such file or directory".
  // Copy-on-write for mmap_weights: the model may write constants it borrows.
  auto file = std::make_shared<runner::MappedFile>(chosen, "weights", mmap_weights);
  if (external && file->size() < blob_size) {
    throw Error("weights file '" + chosen + "' is truncated: it holds " +
                std::to_string(file->size()) + " bytes but the model expects " +
                std::to_string(blob_size));
  }
  // The container knows the exact size its constants take in the blob (the
  // sum over its constants, each at its offset): a blob of any other size
  // was written for another model, whose bytes would be read as this one's.
  if (external && file->size() > blob_size) {
    throw Error("weights file '" + chosen + "' holds " + std::to_string(file->size()) +
                " bytes, more than the " + std::to_string(blob_size) +
                " the model expects: it is another model's weights (pass this model's)");
  }
  if (mmap_weights && external && file->size() > 0) {
    ScopeGuard guard(scope);
    const std::vector<runner::BlobConstant> layout =
        runner::blob_layout(api, library.digest(), device, blob_size, path);
    runner::BlobViews views = runner::view_blob(layout, file);
    mapped_views = std::move(views.by_name);  // deleted by teardown() if the rest fails
    mapped_copied = views.copied;
    std::vector<runner::ConstantMapEntry> pairs;
    for (const auto& [name, handle] : mapped_views) pairs.push_back({name.c_str(), handle});
    runner::update_user_managed(api, container, pairs, /*use_inactive=*/false,
                                /*validate_full_update=*/false,
                                "borrowing the mapped weights '" + chosen + "'");
    mapped_bytes = file->size();
    weights_path = chosen;
    return;  // the views hold the mapping; `file` goes here
  }
  weights = std::move(*file);
  ScopeGuard guard(scope);
  clear_last_error();
  api.check(api.update_constants_from_blob(container, weights.data()),
            "loading weights from '" + chosen + "'");
  weights_path = chosen;
}

void Model::Impl::record_constant_ptrs() {
  if (!runner::can_extract_constants(api)) return;
  std::map<std::string, AtenTensorHandle> entries;
  try {
    entries = runner::extract_constants(api, container, false, "reading the model's constants");
  } catch (const std::exception&) {
    return;
  }
  for (const auto& [fqn, handle] : entries) {
    if (handle && is_live_handle(handle)) constant_ptrs.push_back(tensor_info(handle).data_ptr);
  }
}

std::vector<std::string> Model::Impl::teardown() {
  std::vector<std::string> found;
  if (graphs) {
    // The recordings' tensors are the model's; they go before its scope.
    CurrentDevice on(*target);
    ScopeGuard guard(scope);
    try {
      graphs->clear();
    } catch (const std::exception& e) {
      found.push_back(std::string("freeing the recorded CUDA graphs: ") + e.what());
    }
    graphs.reset();
  }
  if (container) {
    CurrentDevice on(*target);
    ScopeGuard guard(scope);
    clear_last_error();
    // Never skipped: deleting the container is what frees its constants.
    if (api.destroy(container) != 0) found.push_back(api.error_message("deleting the container"));
    container = nullptr;
  }
  constants.release();  // what backed loaded constants, now that nothing reads it
  if (!mapped_views.empty()) {  // a load that failed before `constants` adopted them
    ScopeGuard guard(scope);
    for (auto& [name, handle] : mapped_views) runner::delete_if_live(handle);
    mapped_views.clear();
  }
  if (has_scope) {
    CurrentDevice on(*target);
    for (std::string& leak : destroy_scope(scope)) found.push_back(std::move(leak));
    has_scope = false;
  }
  weights = runner::MappedFile();
  proxy.reset();
  library = runner::SharedLibrary();  // the library itself stays loaded, for the next load
  return found;
}

void Model::Impl::require_open() const {
  if (closed) throw Error("model '" + path + "' is closed");
}

std::vector<AtenTensorHandle> Model::Impl::invoke(std::vector<AtenTensorHandle>& inputs) {
  if (!graphs) return call_container(inputs);
  std::lock_guard<std::mutex> serial(graph_mutex);
  ScopeGuard guard(scope);
  return graphs->run(inputs, [this](std::vector<AtenTensorHandle>& in) {
    return call_container(in);
  });
}

std::vector<AtenTensorHandle> Model::Impl::call_container(std::vector<AtenTensorHandle>& inputs) {
  std::vector<AtenTensorHandle> outputs(output_names.size(), nullptr);
  std::optional<runner::CpuTeam> team;  // the OpenMP threads this run uses (cpu_team.h)
  if (is_cpu(device)) {
    note_cpu_run();
    team.emplace();
  }
  ScopeGuard guard(scope);
  clear_last_error();
  target->take_runtime_error();  // an earlier caller's, not this run's
  const uint64_t check_failures = check_failure_count();
  runner::AOTIRuntimeError err;
  {
    ShimTimer timer("model run (the container's whole run)");
    const auto run = cuda_graphs ? api.run_single_threaded : api.run;
    err = run(container, inputs.data(), inputs.size(), outputs.data(), outputs.size(),
              run_stream(*target), proxy ? proxy->handle() : nullptr);
  }
  // A check that failed inside a parallel kernel could not stop the run; its
  // outputs are not to be trusted.
  if (check_failure_count() != check_failures) {
    set_last_error(last_check_failure());
    err = AOTI_TORCH_FAILURE;
  }
  if (err != 0) {
    const std::string message = api.error_message("running model '" + path + "'");
    // A model that fails its input checks has not taken its inputs yet.
    for (AtenTensorHandle h : inputs) delete_if_live(h);
    try {
      release_outputs(outputs.data(), outputs.size(), nullptr);
    } catch (const std::exception&) {
      // The run's own error is the one worth reporting.
    }
    throw Error(message);
  }
  return outputs;
}

Model::Model() : impl_(std::make_unique<Impl>()) {}

Model::~Model() {
  try {
    const auto leaks = close();
    for (const auto& leak : leaks) log(LogLevel::Warn, "model leak: " + leak);
  } catch (const std::exception& e) {
    // A destructor reports, it never throws. Constants still viewed by
    // another model or the caller must outlive this object: it is left
    // behind, container and scope included, rather than freed under them.
    if (impl_ && impl_->constants.leases() > 0) {
      log(LogLevel::Warn, std::string("model left loaded: ") + e.what());
      (void)impl_.release();
    }
  } catch (...) {
  }
}

std::unique_ptr<Model> Model::load(const std::string& requested_path,
                                   const std::string& weights_path, const std::string& device) {
  return load(requested_path, weights_path, device, LoadOptions{});
}

std::unique_ptr<Model> Model::load(const std::string& requested_path,
                                   const std::string& weights_path, const std::string& device,
                                   const LoadOptions& options) {
  parse_device_abi(device);  // "invalid device 'cpu:1' ..." before anything is loaded
  const std::string so_path = canonical_file(requested_path, "model file");
  require_not_forked(so_path, device);
  const runner::ShimCheck symbols = runner::check_model_symbols(so_path);
  runner::require_loadable(so_path, symbols);
  enable_model_input_checks();

  DeviceType type = DeviceType::CPU;
  int32_t index = 0;
  parse_device(device, type, index);
  Device& target = get_device(type, index);  // a clear error for one not present
  // Bound before anything is created: an op without an implementation
  // refuses the model here, by name.
  std::unique_ptr<runner::ProxyExecutor> proxy = open_proxy_executor(so_path, symbols, target);

  std::unique_ptr<Model> model(new Model());
  Impl& m = *model->impl_;
  m.path = so_path;
  m.device = device;
  m.target = &target;
  m.proxy = std::move(proxy);
  m.library = runner::SharedLibrary::open(so_path);
  m.api = runner::ContainerApi::resolve(m.library);
  m.api.runtime_error = [&target] { return target.take_runtime_error(); };
  if (options.cuda_graphs) {
    if (!target.can_record_graphs()) {
      throw Error("cuda_graphs needs a cuda device; '" + device + "' cannot record CUDA graphs");
    }
    if (!m.api.run_single_threaded) {
      throw Error("'" + so_path + "' cannot be run with cuda_graphs: it lacks " +
                  "AOTInductorModelContainerRunSingleThreaded (compiled by an older torch?)");
    }
    m.cuda_graphs = true;
    m.graphs = std::make_unique<runner::GraphRuns>(target, fs::path(so_path).filename().string());
  }
  if (options.mmap_weights) {
    if (!is_cpu(device)) {
      throw Error("mmap_weights applies to cpu models, whose constants can borrow the mapped " +
                  std::string("blob; a model on '") + device + "' copies its weights to the " +
                  "device (load it without mmap_weights)");
    }
    m.mmap_weights = true;
  }
  m.scope = create_scope("model " + fs::path(so_path).filename().string());
  m.has_scope = true;
  // The model's constructor makes its device current and leaves it so.
  CurrentDevice on(target);
  try {
    m.open_container();
    m.feed_weights(weights_path);
    m.record_constant_ptrs();
    m.constants.describe(&m.api, m.container, m.scope, so_path, device);
    if (!m.mapped_views.empty()) m.constants.adopt_active(std::move(m.mapped_views));
    m.mapped_views.clear();
  } catch (...) {
    m.closed = true;
    m.torn_down = true;
    m.teardown();  // a failed load leaves nothing behind
    throw;
  }
  return model;
}

std::vector<AtenTensorHandle> Model::run(const std::vector<AtenTensorHandle>& inputs) {
  if (impl_->closed) {
    consume(inputs);  // consumed on every path
    impl_->require_open();
  }
  std::shared_lock<std::shared_mutex> lock = impl_->admit_run();
  CurrentDevice on(*impl_->target);
  if (impl_->closed || inputs.size() != impl_->input_names.size() ||
      (is_cpu(impl_->device) && g_forked_after_cpu_run)) {
    consume(inputs);  // consumed on every path
    impl_->require_open();
    require_not_forked(impl_->path, impl_->device);
    throw Error("model '" + impl_->path + "' takes " + std::to_string(impl_->input_names.size()) +
                " input(s), got " + std::to_string(inputs.size()));
  }
  std::vector<AtenTensorHandle> stolen = adopt_inputs(inputs, impl_->scope, impl_->path);
  std::vector<AtenTensorHandle> slots = impl_->invoke(stolen);

  const uint64_t caller = current_scope_id();
  std::vector<AtenTensorHandle> results(slots.size(), nullptr);
  try {
    release_outputs(slots.data(), slots.size(), [&](size_t i, AtenTensorHandle h) {
      if (!h) return;
      ScopeGuard guard(caller);  // the caller owns what it gets back
      // Memory the model borrowed (its constants, the caller's inputs) may
      // go away with the model: hand back a copy instead of a view.
      check(tensor_info(h).owns_storage ? aoti_torch_new_tensor_handle(h, &results[i])
                                        : aoti_torch_clone(h, &results[i]));
    });
  } catch (...) {
    for (AtenTensorHandle h : results) delete_if_live(h);
    throw;
  }
  return results;
}

std::vector<HostOutput> Model::run_host(const std::vector<HostInput>& inputs) {
  impl_->require_open();  // before the lock: a close in progress admits no new run
  std::shared_lock<std::shared_mutex> lock = impl_->admit_run();
  Impl& m = *impl_;
  CurrentDevice on(*m.target);
  m.require_open();
  require_not_forked(m.path, m.device);
  if (inputs.size() != m.input_names.size()) {
    throw Error("model '" + m.path + "' takes " + std::to_string(m.input_names.size()) +
                " input(s), got " + std::to_string(inputs.size()));
  }
  std::vector<AtenTensorHandle> handles;
  // For writable inputs run on a copy: the caller's buffer (a view in its
  // own strides) and a second handle to the copy, which the model's run
  // consumes; the copy goes back into the buffer once the run succeeded.
  std::vector<std::pair<AtenTensorHandle, AtenTensorHandle>> write_back;
  auto drop_write_back = [&] {
    for (auto& [dst, copy] : write_back) {
      delete_if_live(dst);
      delete_if_live(copy);
    }
    write_back.clear();
  };
  {
    ScopeGuard guard(m.scope);
    try {
      for (const HostInput& in : inputs) {
        if (in.writable && m.device == "cpu" && is_contiguous(in.sizes, in.strides)) {
          // Borrowed: the caller's buffer outlives the run, and the model
          // may write it. Empty strides mean packed, which the model checks.
          handles.push_back(borrow_host_memory(const_cast<void*>(in.data), in.sizes, {},
                                               in.dtype, nullptr));
          continue;
        }
        // A read-only buffer is never handed to the model: it may write its
        // inputs in place (a crash on read-only pages, a changed constant).
        handles.push_back(copy_from_host(in.data, in.sizes, in.strides, in.dtype, m.device));
        if (in.writable) {
          AtenTensorHandle copy = nullptr;
          check(aoti_torch_new_tensor_handle(handles.back(), &copy));
          write_back.emplace_back(nullptr, copy);
          write_back.back().first = borrow_host_memory(const_cast<void*>(in.data), in.sizes,
                                                       in.strides, in.dtype, nullptr);
        }
      }
    } catch (...) {
      for (AtenTensorHandle h : handles) delete_if_live(h);
      drop_write_back();
      throw;
    }
  }
  std::vector<AtenTensorHandle> slots;
  try {
    slots = m.invoke(handles);
    for (auto& [dst, copy] : write_back) check(aoti_torch_copy_(dst, copy, 0));
  } catch (...) {
    if (!slots.empty()) release_outputs(slots.data(), slots.size(), nullptr);
    drop_write_back();
    throw;
  }
  drop_write_back();

  std::vector<HostOutput> results(slots.size());
  release_outputs(slots.data(), slots.size(), [&](size_t i, AtenTensorHandle h) {
    if (!h) return;
    const TensorInfo info = tensor_info(h);
    HostOutput& out = results[i];
    out.defined = true;
    out.sizes = info.sizes;
    out.dtype = info.dtype;
    size_t numel = 1;
    for (int64_t s : info.sizes) numel *= static_cast<size_t>(s);
    out.data.resize(numel * aoti_torch_dtype_element_size(info.dtype));
    if (!out.data.empty()) copy_to_host(h, out.data.data());
  });
  return results;
}

std::vector<std::string> Model::close() {
  impl_->closed = true;  // refuses new runs from here on
  std::unique_lock<std::shared_mutex> lock(impl_->mutex);  // waits for those in flight
  if (impl_->torn_down) return {};
  if (const int leases = impl_->constants.leases(); leases > 0) {
    impl_->closed = false;
    throw Error("model '" + impl_->path + "' cannot close: its constants are still viewed by " +
                std::to_string(leases) + " map(s) from extract_constants_map (or models " +
                "that borrowed them with user_managed); release those first");
  }
  impl_->torn_down = true;
  impl_->leaks = impl_->teardown();
  return impl_->leaks;
}

bool Model::closed() const { return impl_->closed; }

void Model::Impl::refuse_with_graphs(const char* what) const {
  if (cuda_graphs) {
    throw Error(std::string("model '") + path + "' was loaded with cuda_graphs, whose " +
                "recordings hold its constants' addresses: " + what + " is not supported");
  }
}

std::vector<std::string> Model::constant_fqns() const { return impl_->constants.fqns(); }

void Model::load_constants(const std::map<std::string, AtenTensorHandle>& given,
                           const ConstantLoadOptions& options) {
  Impl& m = *impl_;
  m.require_open();
  std::lock_guard<std::mutex> serial(m.constants_mutex);
  CurrentDevice on(*m.target);
  if (options.use_inactive) {
    // The inactive buffer is not read by runs: they go on meanwhile.
    std::shared_lock<std::shared_mutex> lock = m.admit_run();
    m.require_open();
    m.constants.load(given, options.check_full_update, options.user_managed, true);
    return;
  }
  m.refuse_with_graphs("load_constants on the active buffer");
  std::unique_lock<std::shared_mutex> lock = m.exclusive();
  m.require_open();
  m.constants.load(given, options.check_full_update, options.user_managed, false);
}

std::map<std::string, AtenTensorHandle> Model::extract_constants_map(bool use_inactive) {
  Impl& m = *impl_;
  m.require_open();
  std::lock_guard<std::mutex> serial(m.constants_mutex);
  std::shared_lock<std::shared_mutex> lock = m.admit_run();
  m.require_open();
  return m.constants.extract(use_inactive);
}

void Model::swap_constant_buffer() {
  Impl& m = *impl_;
  m.require_open();
  m.refuse_with_graphs("swap_constant_buffer");
  std::lock_guard<std::mutex> serial(m.constants_mutex);
  CurrentDevice on(*m.target);
  std::unique_lock<std::shared_mutex> lock = m.exclusive();  // between runs
  m.require_open();
  m.constants.swap();
}

void Model::free_inactive_constant_buffer() {
  Impl& m = *impl_;
  m.require_open();
  std::lock_guard<std::mutex> serial(m.constants_mutex);
  CurrentDevice on(*m.target);
  std::shared_lock<std::shared_mutex> lock = m.admit_run();
  m.require_open();
  m.constants.free_inactive();
}

const std::string& Model::path() const { return impl_->path; }
const std::string& Model::weights_path() const { return impl_->weights_path; }
const std::string& Model::device() const { return impl_->device; }
const std::vector<std::string>& Model::input_names() const { return impl_->input_names; }
const std::vector<std::string>& Model::output_names() const { return impl_->output_names; }
const std::vector<std::string>& Model::constant_names() const { return impl_->constant_names; }
uint64_t Model::scope() const { return impl_->scope; }
uint64_t Model::constants_blob_size() const { return impl_->blob_size; }
uint64_t Model::mapped_weights_bytes() const { return impl_->mapped_bytes; }
size_t Model::copied_mapped_constants() const { return impl_->mapped_copied; }
const std::vector<const void*>& Model::constant_data_ptrs() const { return impl_->constant_ptrs; }
bool Model::records_graphs() const { return impl_->cuda_graphs; }

std::vector<GraphInfo> Model::graphs() const {
  std::shared_lock<std::shared_mutex> lock(impl_->mutex);  // close() resets them
  std::lock_guard<std::mutex> serial(impl_->graph_mutex);
  return impl_->graphs ? impl_->graphs->info() : std::vector<GraphInfo>{};
}

std::vector<std::string> Model::leaks() const {
  std::shared_lock<std::shared_mutex> lock(impl_->mutex);  // close() writes it
  return impl_->leaks;
}

}  // namespace aotishim
