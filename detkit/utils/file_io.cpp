#include "detkit/utils/file_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "detkit/utils/error.h"
#include "detkit/utils/stop_signal.h"

namespace detkit {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open '" + path + "': " + std::strerror(errno));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw Error("cannot read '" + path + "'");
  return buffer.str();
}

namespace {
// "No space left on device (ENOSPC)": the reason and the errno's name.
std::string errno_text(int error) {
  const char* name = strerrorname_np(error);
  return std::string(std::strerror(error)) + " (" + (name ? name : std::to_string(error)) + ")";
}
}  // namespace

void atomic_write(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  // Whatever fails, `path` keeps its old content and the temporary file is removed.
  auto fail = [&](const std::string& what, int error, int fd) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    internal::set_temporary_in_progress("");
    throw Error("cannot " + what + " '" + path + "' (through its temporary '" + tmp +
                "'): " + errno_text(error) + "; the previous file, if any, is unchanged");
  };
  internal::set_temporary_in_progress(tmp);  // a second stop signal removes it
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) fail("create", errno, -1);
  const char* data = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, data, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write", errno, fd);
    }
    data += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) fail("flush", errno, fd);
  if (::close(fd) != 0) fail("flush", errno, -1);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) fail("rename into", errno, -1);
  internal::set_temporary_in_progress("");
}

void append_whole(const std::string& path, const std::string& content) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) throw Error("cannot append to '" + path + "': " + errno_text(errno));
  const off_t before = ::lseek(fd, 0, SEEK_END);
  const char* data = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      if (before >= 0 && ::ftruncate(fd, before) != 0) {
        // Nothing more can be done: the message says so.
        ::close(fd);
        throw Error("cannot append to '" + path + "': " + errno_text(error) +
                    "; and cannot cut the partial record off: " + errno_text(errno));
      }
      ::close(fd);
      throw Error("cannot append to '" + path + "': " + errno_text(error) +
                  "; the file is left as it was before");
    }
    data += n;
    left -= static_cast<size_t>(n);
  }
  if (::close(fd) != 0) throw Error("cannot append to '" + path + "': " + errno_text(errno));
}

}  // namespace detkit
