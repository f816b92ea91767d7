#include "detkit/utils/loaded_libraries.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>

#include <initializer_list>
#include <set>
#include <sstream>

#include "detkit/utils/file_io.h"
#include "detkit/utils/strings.h"

namespace detkit {

namespace {
std::string file_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string folder(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

bool starts_with_any(const std::string& text, std::initializer_list<const char*> prefixes) {
  for (const char* prefix : prefixes)
    if (starts_with(text, prefix)) return true;
  return false;
}

bool is_shared_library(const std::string& name) {
  // libdnnl.so, libgomp.so.1, libopenblasp-r0.3.21.so
  return ends_with(name, ".so") || name.find(".so.") != std::string::npos;
}

// A BLAS or LAPACK under its interface's generic name, whoever built it.
bool is_blas_interface(const std::string& name) {
  return starts_with_any(name, {"libblas.so", "libcblas.so", "liblapack.so", "liblapacke.so"});
}

bool is_foreign(const std::string& path, const std::string& torch_dir) {
  const std::string name = file_name(path), dir = folder(path), parent = file_name(dir);
  if (starts_with_any(name, {"libopenblas", "libblis", "libatlas", "libsatlas", "libtatlas",
                             "libmkl", "libdnnl", "libiomp", "libomp.so", "libomp-"}))
    return true;
  if (starts_with_any(parent, {"openblas", "blis", "atlas"})) return true;
  if (starts_with(name, "libgomp")) return torch_dir.empty() || dir != torch_dir;
  return false;
}
}  // namespace

std::vector<std::string> mapped_libraries(const std::string& maps) {
  std::vector<std::string> libraries;
  std::set<std::string> seen;
  std::istringstream lines(maps);
  std::string line;
  while (std::getline(lines, line)) {
    // address perms offset dev inode [path]
    std::istringstream fields(line);
    std::string address, permissions, offset, device, inode, path;
    if (!(fields >> address >> permissions >> offset >> device >> inode)) continue;
    std::getline(fields >> std::ws, path);
    const std::string deleted = " (deleted)";
    if (ends_with(path, deleted)) path.resize(path.size() - deleted.size());
    if (path.empty() || path[0] != '/' || !is_shared_library(file_name(path))) continue;
    if (seen.insert(path).second) libraries.push_back(path);
  }
  return libraries;
}

std::vector<std::string> loaded_libraries() {
  return mapped_libraries(read_file("/proc/self/maps"));  // unreadable: an error, never "none"
}

std::string torch_library_dir(const std::vector<std::string>& libraries) {
  for (const std::string& path : libraries)
    if (file_name(path) == "libtorch_cpu.so") return folder(path);
  return "";
}

std::vector<std::string> foreign_math_libraries(const std::vector<std::string>& libraries) {
  const std::string torch_dir = torch_library_dir(libraries);
  std::vector<std::string> foreign;
  for (const std::string& path : libraries)
    if (is_foreign(path, torch_dir)) foreign.push_back(path);
  return foreign;
}

std::vector<std::string> foreign_math_libraries() {
  return foreign_math_libraries(loaded_libraries());
}

std::vector<std::string> reference_blas_libraries(const std::vector<std::string>& libraries) {
  const std::string torch_dir = torch_library_dir(libraries);
  std::vector<std::string> reference;
  for (const std::string& path : libraries)
    if (is_blas_interface(file_name(path)) && !is_foreign(path, torch_dir))
      reference.push_back(path);
  return reference;
}

std::vector<std::string> reference_blas_libraries() {
  return reference_blas_libraries(loaded_libraries());
}

std::string blas_symbol_owner(const char* symbol) {
  void* address = dlsym(RTLD_DEFAULT, symbol);
  Dl_info info;
  if (!address || !dladdr(address, &info) || !info.dli_fname || !*info.dli_fname) return "";
  char resolved[PATH_MAX];
  return realpath(info.dli_fname, resolved) ? resolved : info.dli_fname;
}

}  // namespace detkit
