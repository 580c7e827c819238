// cudalens capture recorder: a CUDA tool-injection library (CUDA_INJECTION64_PATH).
//
// The driver loads this library during cuInit and calls InitializeInjection(). It subscribes
// to CUPTI's driver-API callbacks for the kernel launch functions (cuLaunchKernel,
// cuLaunchKernelEx, cuLaunchCooperativeKernel and their per-thread-stream forms). Runtime-API
// launches (cudaLaunchKernel, <<<...>>>, a statically linked cudart, PyTorch) reach the driver
// through these same functions, so one subscription sees every launch exactly once.
//
// Runtime-API launch callbacks (cudaLaunchKernel*, __cudaLaunchKernel) are watched only to
// report a runtime launch that did not reach these driver functions (runtime_only.tsv).
//
// For the launch numbered CUDALENS_CAPTURE_LAUNCH (1-based) of each kernel named in
// CUDALENS_CAPTURE_KERNELS (one name per line; a name matches the demangled name without its
// parameter list, with or without template arguments and namespaces), it:
//   - synchronizes the context (all earlier work done), reads each parameter's bytes at the
//     offsets cuFuncGetParamInfo gives, and, for each 8-byte parameter that lies inside a
//     device allocation (cuMemGetAddressRange), the allocation's range;
//   - refuses (writes "refused") when twice the allocations' bytes exceed
//     CUDALENS_CAPTURE_MAX_BYTES, before copying anything;
//   - copies each allocation device-to-host before the launch and, after synchronizing again,
//     after it. Buffers are only read, never written: the program's results are unchanged.
// Launches inside a CUDA graph capture are counted but never recorded (synchronizing there
// would break the program's graph capture).
//
// Output under CUDALENS_CAPTURE_DIR (read by cudalens.capture.raw):
//   launched.tsv           one line per distinct kernel, when first launched: MANGLED\tDEMANGLED
//   runtime_only.tsv       kernels launched through the runtime without a driver callback
//   counts.<PID>.tsv       at exit: COUNT\tMANGLED for every kernel the process launched
//   k<PID>.<N>/meta.txt    one record per line (see raw.py); its last line is "end"
//   k<PID>.<N>/a<J>.before.bin  allocation J's bytes before the launch; a<J>.after.bin after
// (per process: a program's child processes, e.g. data loader workers, inherit the injection)
#include <cupti.h>
#include <cuda.h>
#include <cxxabi.h>
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

using PFN_sync = CUresult (*)();
using PFN_range = CUresult (*)(CUdeviceptr *, size_t *, CUdeviceptr);
using PFN_dtoh = CUresult (*)(void *, CUdeviceptr, size_t);
using PFN_param_info = CUresult (*)(CUfunction, size_t, size_t *, size_t *);
// cuKernelGetParamInfo takes a CUkernel (a library kernel, CUDA 12.4+). The CUDA 12/13 runtime
// loads kernels through the library API, so the handle its launches pass may be a CUkernel cast
// to CUfunction, for which cuFuncGetParamInfo fails (seen on an H200, CUDA 13: 0 parameters).
using PFN_kernel_param_info = CUresult (*)(void *, size_t, size_t *, size_t *);
using PFN_capturing = CUresult (*)(CUstream, CUstreamCaptureStatus *);
using PFN_func_name = CUresult (*)(const char **, CUfunction);

struct Driver {
  PFN_sync sync = nullptr;
  PFN_range range = nullptr;
  PFN_dtoh dtoh = nullptr;
  PFN_param_info param_info = nullptr;
  PFN_kernel_param_info kernel_param_info = nullptr;
  PFN_capturing capturing = nullptr;
  PFN_func_name func_name = nullptr;
};

struct Alloc {
  CUdeviceptr base;
  size_t size;
  std::vector<char> before;
};

struct Pending {  // a launch being recorded, between the enter and exit callbacks
  std::string dir;
  std::vector<Alloc> allocs;
  bool active = false;
};

std::mutex g_lock;
Driver g_drv;
std::string g_out;
std::set<std::string> g_wanted;
long g_launch = 1;
unsigned long long g_max_bytes = 0;  // 0: no limit
std::map<std::string, long> g_counts;
std::map<std::string, std::string> g_demangled;
int g_next_record = 0;
thread_local Pending t_pending;
thread_local bool t_inside = false;
thread_local int t_runtime_depth = 0;  // inside a runtime-API launch call
thread_local bool t_driver_seen = false;  // a driver launch callback fired inside it
std::set<std::string> g_runtime_only;

std::string demangle(const std::string &mangled) {
  int status = 0;
  char *text = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  if (status != 0 || text == nullptr) return mangled;
  std::string out(text);
  std::free(text);
  return out;
}

// The demangled name up to its top-level parameter list: "ns::k<float>(float*, int)" ->
// "ns::k<float>".
std::string without_params(const std::string &name) {
  int depth = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (c == '<') ++depth;
    else if (c == '>') --depth;
    else if (c == '(' && depth == 0) return name.substr(0, i);
  }
  return name;
}

std::string strip_templates(const std::string &name) {
  std::string out;
  int depth = 0;
  for (char c : name) {
    if (c == '<') ++depth;
    else if (c == '>') --depth;
    else if (depth == 0) out += c;
  }
  return out;
}

std::string last_component(const std::string &name) {
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i + 1 < name.size(); ++i) {
    char c = name[i];
    if (c == '<') ++depth;
    else if (c == '>') --depth;
    else if (depth == 0 && c == ':' && name[i + 1] == ':') start = i + 2;
  }
  return name.substr(start);
}

bool wanted(const std::string &demangled, const std::string &mangled) {
  std::string full = without_params(demangled);
  std::string bare = strip_templates(full);
  for (const std::string &n : {full, bare, last_component(full), last_component(bare), mangled})
    if (g_wanted.count(n)) return true;
  return false;
}

void append_line(const std::string &path, const std::string &line) {
  FILE *f = std::fopen(path.c_str(), "a");
  if (!f) return;
  std::fputs(line.c_str(), f);
  std::fputc('\n', f);
  std::fclose(f);
}

bool write_file(const std::string &path, const void *data, size_t size) {
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  bool ok = size == 0 || std::fwrite(data, 1, size, f) == size;
  return std::fclose(f) == 0 && ok;
}

std::string hex(const unsigned char *p, size_t n) {
  static const char *digits = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s += digits[p[i] >> 4];
    s += digits[p[i] & 15];
  }
  return s;
}

struct LaunchView {
  CUfunction f = nullptr;
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  unsigned shared = 0;
  CUstream stream = nullptr;
  void **params = nullptr;
  void **extra = nullptr;
  const char *api = "";
};

bool view_of(CUpti_CallbackId cbid, const void *fp, LaunchView *v) {
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
      auto *p = static_cast<const cuLaunchKernel_params *>(fp);
      *v = LaunchView{p->f, {p->gridDimX, p->gridDimY, p->gridDimZ},
                      {p->blockDimX, p->blockDimY, p->blockDimZ}, p->sharedMemBytes,
                      p->hStream, p->kernelParams, p->extra, "cuLaunchKernel"};
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: {
      auto *p = static_cast<const cuLaunchCooperativeKernel_params *>(fp);
      *v = LaunchView{p->f, {p->gridDimX, p->gridDimY, p->gridDimZ},
                      {p->blockDimX, p->blockDimY, p->blockDimZ}, p->sharedMemBytes,
                      p->hStream, p->kernelParams, nullptr, "cuLaunchCooperativeKernel"};
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
      auto *p = static_cast<const cuLaunchKernelEx_params *>(fp);
      const CUlaunchConfig *c = p->config;
      *v = LaunchView{p->f, {c->gridDimX, c->gridDimY, c->gridDimZ},
                      {c->blockDimX, c->blockDimY, c->blockDimZ}, c->sharedMemBytes,
                      c->hStream, p->kernelParams, p->extra, "cuLaunchKernelEx"};
      return true;
    }
    default:
      return false;
  }
}

// The bytes of parameter i: from kernelParams[i], or from the packed buffer in `extra`.
const unsigned char *param_bytes(const LaunchView &v, size_t i, size_t offset) {
  if (v.params) return static_cast<const unsigned char *>(v.params[i]);
  if (!v.extra) return nullptr;
  for (void **e = v.extra; *e != CU_LAUNCH_PARAM_END; e += 2)
    if (*e == CU_LAUNCH_PARAM_BUFFER_POINTER)
      return static_cast<const unsigned char *>(e[1]) + offset;
  return nullptr;
}

void begin_record(const LaunchView &v, const std::string &mangled, long index) {
  std::ostringstream meta;
  std::string dir;
  {
    std::lock_guard<std::mutex> hold(g_lock);
    dir = g_out + "/k" + std::to_string(getpid()) + "." + std::to_string(g_next_record++);
  }
  mkdir(dir.c_str(), 0755);
  meta << "kernel " << mangled << "\n";
  meta << "demangled " << g_demangled[mangled] << "\n";
  meta << "launch_index " << index << "\n";
  meta << "api " << v.api << "\n";
  meta << "grid " << v.grid[0] << " " << v.grid[1] << " " << v.grid[2] << "\n";
  meta << "block " << v.block[0] << " " << v.block[1] << " " << v.block[2] << "\n";
  meta << "shared " << v.shared << "\n";
  std::string meta_path = dir + "/meta.txt";
  auto fail = [&](const std::string &why) {
    meta << "error " << why << "\nend\n";
    std::string text = meta.str();
    write_file(meta_path, text.data(), text.size());
  };
  if (!g_drv.param_info) return fail("the driver has no cuFuncGetParamInfo (CUDA 12.4 or newer needed)");
  CUresult r = g_drv.sync();
  if (r != CUDA_SUCCESS) return fail("cuCtxSynchronize before the launch failed: " + std::to_string(r));
  std::vector<Alloc> allocs;
  std::ostringstream ptrs;
  // Which query knows this handle: cuFuncGetParamInfo (a CUfunction) or cuKernelGetParamInfo
  // (a CUkernel); a kernel with no parameters fails both at index 0.
  bool as_kernel = false;
  {
    size_t offset = 0, size = 0;
    CUresult fr = g_drv.param_info(v.f, 0, &offset, &size);
    if (fr != CUDA_SUCCESS && g_drv.kernel_param_info) {
      CUresult kr = g_drv.kernel_param_info(reinterpret_cast<void *>(v.f), 0, &offset, &size);
      as_kernel = kr == CUDA_SUCCESS;
      if (!as_kernel) meta << "param_info_errors " << fr << " " << kr << "\n";
    }
  }
  for (size_t i = 0;; ++i) {
    size_t offset = 0, size = 0;
    CUresult pr = as_kernel
        ? g_drv.kernel_param_info(reinterpret_cast<void *>(v.f), i, &offset, &size)
        : g_drv.param_info(v.f, i, &offset, &size);
    if (pr != CUDA_SUCCESS) break;
    const unsigned char *bytes = param_bytes(v, i, offset);
    if (!bytes) return fail("the launch passes its parameters in a form the recorder cannot read");
    meta << "param " << i << " " << offset << " " << size << " " << hex(bytes, size) << "\n";
    if (size != 8) continue;
    CUdeviceptr value;
    std::memcpy(&value, bytes, 8);
    CUdeviceptr base = 0;
    size_t extent = 0;
    if (value == 0 || g_drv.range(&base, &extent, value) != CUDA_SUCCESS) continue;
    size_t j = 0;
    while (j < allocs.size() && allocs[j].base != base) ++j;
    if (j == allocs.size()) allocs.push_back(Alloc{base, extent, {}});
    ptrs << "pointer " << i << " " << j << " " << (value - base) << "\n";
  }
  unsigned long long total = 0;
  for (size_t j = 0; j < allocs.size(); ++j) {
    meta << "alloc " << j << " " << allocs[j].base << " " << allocs[j].size << "\n";
    total += 2ull * allocs[j].size;
  }
  meta << ptrs.str();
  meta << "total_bytes " << total << "\n";
  if (g_max_bytes && total > g_max_bytes) {
    meta << "refused " << total << " " << g_max_bytes << "\nend\n";
    std::string text = meta.str();
    write_file(meta_path, text.data(), text.size());
    return;
  }
  for (size_t j = 0; j < allocs.size(); ++j) {
    allocs[j].before.resize(allocs[j].size);
    r = g_drv.dtoh(allocs[j].before.data(), allocs[j].base, allocs[j].size);
    if (r != CUDA_SUCCESS) return fail("copying allocation " + std::to_string(j) + " failed: " + std::to_string(r));
    std::string name = dir + "/a" + std::to_string(j) + ".before.bin";
    if (!write_file(name, allocs[j].before.data(), allocs[j].size)) return fail("cannot write " + name);
    allocs[j].before.clear();
    allocs[j].before.shrink_to_fit();
  }
  std::string text = meta.str();
  write_file(meta_path + ".part", text.data(), text.size());
  t_pending.dir = dir;
  t_pending.allocs = std::move(allocs);
  t_pending.active = true;
}

void end_record(CUresult launch_result) {
  Pending p = std::move(t_pending);
  t_pending = Pending{};
  std::string part = p.dir + "/meta.txt.part";
  std::ostringstream tail;
  CUresult r = launch_result == CUDA_SUCCESS ? g_drv.sync() : launch_result;
  if (r != CUDA_SUCCESS) {
    tail << "error the launch failed: CUresult " << r << "\n";
  } else {
    for (size_t j = 0; j < p.allocs.size(); ++j) {
      std::vector<char> after(p.allocs[j].size);
      if (g_drv.dtoh(after.data(), p.allocs[j].base, after.size()) != CUDA_SUCCESS) {
        tail << "error copying allocation " << j << " after the launch failed\n";
        break;
      }
      write_file(p.dir + "/a" + std::to_string(j) + ".after.bin", after.data(), after.size());
    }
  }
  tail << "end\n";
  append_line(part, tail.str().substr(0, tail.str().size() - 1));
  std::rename(part.c_str(), (p.dir + "/meta.txt").c_str());
}

// Runtime-API launches are only watched, never recorded: each must reach the driver's launch
// functions, where it is recorded. One that does not (no driver callback inside it) is listed
// in runtime_only.tsv, so that a capture that finds nothing says why.
void on_runtime(const CUpti_CallbackData *info) {
  if (info->callbackSite == CUPTI_API_ENTER) {
    if (t_runtime_depth++ == 0) t_driver_seen = false;
    return;
  }
  if (--t_runtime_depth > 0 || t_driver_seen) return;
  std::string name = info->symbolName ? info->symbolName : "?";
  bool first;
  {
    std::lock_guard<std::mutex> hold(g_lock);
    first = g_runtime_only.insert(name).second;
  }
  if (first) append_line(g_out + "/runtime_only.tsv", name + "\t" + demangle(name));
}

void CUPTIAPI on_callback(void *, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                          const void *data) {
  auto *info = static_cast<const CUpti_CallbackData *>(data);
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) return on_runtime(info);
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API || t_inside) return;
  LaunchView v;
  if (!view_of(cbid, info->functionParams, &v)) return;
  if (info->callbackSite == CUPTI_API_ENTER) t_driver_seen = true;
  t_inside = true;
  if (info->callbackSite == CUPTI_API_EXIT) {
    if (t_pending.active) end_record(*static_cast<const CUresult *>(info->functionReturnValue));
    t_inside = false;
    return;
  }
  std::string mangled;
  if (info->symbolName) mangled = info->symbolName;
  else if (g_drv.func_name) {
    const char *n = nullptr;
    if (g_drv.func_name(&n, v.f) == CUDA_SUCCESS && n) mangled = n;
  }
  long index;
  bool first;
  {
    std::lock_guard<std::mutex> hold(g_lock);
    index = ++g_counts[mangled];
    first = index == 1;
    if (first) g_demangled[mangled] = demangle(mangled);
  }
  if (first) append_line(g_out + "/launched.tsv", mangled + "\t" + g_demangled[mangled]);
  if (index == g_launch && wanted(g_demangled[mangled], mangled)) {
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    if (g_drv.capturing) g_drv.capturing(v.stream, &status);
    if (status == CU_STREAM_CAPTURE_STATUS_NONE) begin_record(v, mangled, index);
    else append_line(g_out + "/skipped.tsv", mangled + "\tinside a CUDA graph capture");
  }
  t_inside = false;
}

void write_counts() {
  std::lock_guard<std::mutex> hold(g_lock);
  std::string path = g_out + "/counts." + std::to_string(getpid()) + ".tsv";
  FILE *f = std::fopen(path.c_str(), "w");
  if (!f) return;
  for (const auto &kv : g_counts) std::fprintf(f, "%ld\t%s\n", kv.second, kv.first.c_str());
  std::fclose(f);
}

template <typename T>
T symbol(void *lib, const char *name) {
  return reinterpret_cast<T>(dlsym(lib, name));
}

}  // namespace

extern "C" int InitializeInjection(void) {
  static bool done = false;
  if (done) return 1;
  done = true;
  const char *out = std::getenv("CUDALENS_CAPTURE_DIR");
  if (!out || !*out) return 0;
  g_out = out;
  if (const char *k = std::getenv("CUDALENS_CAPTURE_KERNELS")) {
    std::istringstream names(k);
    for (std::string line; std::getline(names, line);)
      if (!line.empty()) g_wanted.insert(line);
  }
  if (const char *n = std::getenv("CUDALENS_CAPTURE_LAUNCH")) g_launch = std::atol(n);
  if (const char *m = std::getenv("CUDALENS_CAPTURE_MAX_BYTES")) g_max_bytes = std::strtoull(m, nullptr, 10);
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!lib) lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (!lib) {
    append_line(g_out + "/errors.txt", "cannot open libcuda.so.1");
    return 0;
  }
  g_drv.sync = symbol<PFN_sync>(lib, "cuCtxSynchronize");
  g_drv.range = symbol<PFN_range>(lib, "cuMemGetAddressRange_v2");
  g_drv.dtoh = symbol<PFN_dtoh>(lib, "cuMemcpyDtoH_v2");
  g_drv.param_info = symbol<PFN_param_info>(lib, "cuFuncGetParamInfo");
  g_drv.kernel_param_info = symbol<PFN_kernel_param_info>(lib, "cuKernelGetParamInfo");
  g_drv.capturing = symbol<PFN_capturing>(lib, "cuStreamIsCapturing");
  g_drv.func_name = symbol<PFN_func_name>(lib, "cuFuncGetName");
  if (!g_drv.sync || !g_drv.range || !g_drv.dtoh) {
    append_line(g_out + "/errors.txt", "libcuda.so.1 lacks cuCtxSynchronize, cuMemGetAddressRange_v2 or cuMemcpyDtoH_v2");
    return 0;
  }
  CUpti_SubscriberHandle subscriber;
  if (cuptiSubscribe(&subscriber, on_callback, nullptr) != CUPTI_SUCCESS) {
    append_line(g_out + "/errors.txt", "cuptiSubscribe failed (is another CUPTI tool attached?)");
    return 0;
  }
  for (CUpti_CallbackId id : {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
                              CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
                              CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
                              CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
                              CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
                              CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz})
    cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id);
  for (CUpti_CallbackId id : {CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                              CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
                              CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
                              CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
                              CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
                              CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
                              CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
                              CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000})
    cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, id);  // absent: ignored
  append_line(g_out + "/ready.txt", "ready");
  std::atexit(write_counts);
  return 1;
}
