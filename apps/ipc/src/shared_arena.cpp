#include "halox_programs/ipc/shared_arena.hpp"

#include <fmt/core.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <new>
#include <stdexcept>
#include <utility>
#include <vector>

#include "halox/common/error.hpp"

namespace halox::ipc {

namespace {

constexpr uint64_t arena_magic = 0x68616c6f782d6172ull;  // "halox-ar"

std::string errno_text(const char* what) {
  return fmt::format("{}: {}", what, std::strerror(errno));
}

}  // namespace

size_t page_size() {
  static const size_t size = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  return size;
}

size_t round_up_to_page(size_t bytes) {
  size_t page = page_size();
  return (bytes + page - 1) / page * page;
}

shared_arena shared_arena::create(const std::string& name, size_t data_bytes,
                                  size_t control_bytes) {
  shared_arena arena;
  arena.owner_ = true;
  arena.fd_ = ::memfd_create(name.c_str(), MFD_CLOEXEC);
  if (arena.fd_ < 0) throw std::runtime_error(errno_text("memfd_create"));
  ::fchmod(arena.fd_, 0600);  // owner only, also through /proc/PID/fd
  size_t header = round_up_to_page(sizeof(arena_header));
  size_t control = round_up_to_page(control_bytes);
  size_t data = round_up_to_page(std::max<size_t>(data_bytes, 1));
  size_t total = header + control + data;
  if (::ftruncate(arena.fd_, static_cast<off_t>(total)) != 0)
    throw std::runtime_error(errno_text("ftruncate of memfd"));
  void* base = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, arena.fd_, 0);
  if (base == MAP_FAILED) throw std::runtime_error(errno_text("mmap of memfd"));
  arena.base_ = static_cast<std::byte*>(base);
  arena.mapped_bytes_ = total;
  arena.header_ = new (base)
      arena_header{arena_magic, header, control_bytes, header + control, data_bytes, {0}};
  arena.control_ = arena.base_ + header;
  arena.data_ = arena.base_ + header + control;
  return arena;
}

shared_arena shared_arena::import(int fd, bool map_data) {
  shared_arena arena;
  arena.fd_ = fd;  // closed by the destructor, also when this throws
  struct stat file {};
  if (::fstat(fd, &file) != 0) throw std::runtime_error(errno_text("fstat of imported arena"));
  if (static_cast<size_t>(file.st_size) < page_size())
    throw std::runtime_error("imported descriptor is not a halox arena (too small)");
  // Read the sizes from the header, then map what is needed in one piece.
  void* probe = ::mmap(nullptr, page_size(), PROT_READ, MAP_SHARED, fd, 0);
  if (probe == MAP_FAILED) throw std::runtime_error(errno_text("mmap of imported arena header"));
  arena_header copy_of_sizes;
  std::memcpy(static_cast<void*>(&copy_of_sizes), probe, offsetof(arena_header, epoch));
  ::munmap(probe, page_size());
  if (copy_of_sizes.magic != arena_magic ||
      copy_of_sizes.data_offset + copy_of_sizes.data_bytes > static_cast<uint64_t>(file.st_size))
    throw std::runtime_error("imported descriptor is not a halox arena");
  size_t total = map_data ? copy_of_sizes.data_offset + round_up_to_page(copy_of_sizes.data_bytes)
                          : copy_of_sizes.data_offset;
  void* base = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) throw std::runtime_error(errno_text("mmap of imported arena"));
  arena.base_ = static_cast<std::byte*>(base);
  arena.mapped_bytes_ = total;
  arena.header_ = static_cast<arena_header*>(base);
  arena.control_ = arena.base_ + copy_of_sizes.control_offset;
  arena.data_ = map_data ? arena.base_ + copy_of_sizes.data_offset : nullptr;
  return arena;
}

shared_arena::shared_arena(shared_arena&& other) noexcept {
  *this = std::move(other);
}

shared_arena& shared_arena::operator=(shared_arena&& other) noexcept {
  if (this != &other) {
    release();
    fd_ = std::exchange(other.fd_, -1);
    owner_ = std::exchange(other.owner_, false);
    base_ = std::exchange(other.base_, nullptr);
    mapped_bytes_ = std::exchange(other.mapped_bytes_, 0);
    header_ = std::exchange(other.header_, nullptr);
    control_ = std::exchange(other.control_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
  }
  return *this;
}

shared_arena::~shared_arena() {
  release();
}

void shared_arena::release() noexcept {
  if (base_) ::munmap(base_, mapped_bytes_);
  if (fd_ >= 0) ::close(fd_);
  base_ = nullptr;
  fd_ = -1;
}

std::string to_string(fd_passing how) {
  return how == fd_passing::pidfd_getfd ? "pidfd_getfd" : "unix_socket";
}

namespace {

int import_with_pidfd(pid_t pid, int fd, std::string& problem) {
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) {
    problem = errno_text("pidfd_open");
    return -1;
  }
  int imported = static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd, fd, 0));
  if (imported < 0) problem = errno_text("pidfd_getfd");
  ::close(pidfd);
  return imported;
}

sockaddr_un abstract_address(const std::string& name, socklen_t& length) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  // Abstract namespace (leading NUL): nothing left behind in the file system.
  std::memcpy(address.sun_path + 1, name.data(),
              std::min(name.size(), sizeof(address.sun_path) - 2));
  length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return address;
}

int receive_fd(int socket) {
  char byte = 0;
  iovec data{&byte, 1};
  alignas(cmsghdr) char space[CMSG_SPACE(sizeof(int))];
  msghdr message{};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  message.msg_control = space;
  message.msg_controllen = sizeof(space);
  if (::recvmsg(socket, &message, 0) <= 0) return -1;
  cmsghdr* header = CMSG_FIRSTHDR(&message);
  if (!header || header->cmsg_type != SCM_RIGHTS) return -1;
  int fd = -1;
  std::memcpy(&fd, CMSG_DATA(header), sizeof(int));
  return fd;
}

bool send_fd(int socket, int fd) {
  char byte = 0;
  iovec data{&byte, 1};
  alignas(cmsghdr) char space[CMSG_SPACE(sizeof(int))] = {};
  msghdr message{};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  message.msg_control = space;
  message.msg_controllen = sizeof(space);
  cmsghdr* header = CMSG_FIRSTHDR(&message);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(header), &fd, sizeof(int));
  return ::sendmsg(socket, &message, 0) == 1;
}

}  // namespace

pid_t trusted_socket_peer(int connection, std::span<const pid_t> expected) {
  ucred credentials{};
  socklen_t size = sizeof credentials;
  if (::getsockopt(connection, SOL_SOCKET, SO_PEERCRED, &credentials, &size) != 0) return -1;
  if (credentials.uid != ::getuid()) return -1;
  if (std::find(expected.begin(), expected.end(), credentials.pid) == expected.end()) return -1;
  return credentials.pid;
}

namespace {

// SCM_RIGHTS over an abstract Unix socket. The root listens; the others
// connect (the backlog holds them, so nobody waits on a partner that failed),
// all agree, and only then the root accepts and hands the descriptor to each
// rank of the group that connected as this user, and to nobody else.
int share_over_socket(MPI_Comm comm, int root, int fd) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  static int counter = 0;
  long ids[2] = {static_cast<long>(::getpid()), counter++};
  MPI_Bcast(ids, 2, MPI_LONG, root, comm);
  std::string name = fmt::format("halox-ipc-{}-{}", ids[0], ids[1]);
  socklen_t length = 0;
  sockaddr_un address = abstract_address(name, length);
  pid_t my_pid = ::getpid();
  std::vector<pid_t> pids(static_cast<size_t>(size));
  MPI_Gather(&my_pid, sizeof(pid_t), MPI_BYTE, pids.data(), sizeof(pid_t), MPI_BYTE, root, comm);

  std::string problem;
  int listener = -1;
  if (rank == root) {
    listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    // Room for strangers in the backlog, so they cannot block a rank's connect.
    if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
        ::listen(listener, size + 64) != 0)
      problem = errno_text("listening Unix socket");
  }
  if (auto error = agree_on_error(comm, problem); !error.empty()) {
    if (listener >= 0) ::close(listener);
    throw run_error(fmt::format("cannot share a file descriptor: {}", error));
  }
  int connection = -1;
  if (rank != root) {
    connection = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (connection < 0 || ::connect(connection, reinterpret_cast<sockaddr*>(&address), length) != 0)
      problem = errno_text("connecting Unix socket");
  }
  if (auto error = agree_on_error(comm, problem); !error.empty()) {
    if (listener >= 0) ::close(listener);
    if (connection >= 0) ::close(connection);
    throw run_error(fmt::format("cannot share a file descriptor: {}", error));
  }
  int result = -1;
  if (rank == root) {
    std::vector<pid_t> waiting;
    for (int r = 0; r < size; ++r)
      if (r != root) waiting.push_back(pids[static_cast<size_t>(r)]);
    // Every rank has connected already: accepting cannot wait on a failed one,
    // and a stranger is refused without a descriptor.
    while (!waiting.empty() && problem.empty()) {
      int peer = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (peer < 0) {
        problem = errno_text("accepting on the Unix socket");
        break;
      }
      if (pid_t pid = trusted_socket_peer(peer, waiting); pid > 0) {
        if (!send_fd(peer, fd)) problem = errno_text("sending descriptor");
        std::erase(waiting, pid);
      }
      ::close(peer);
    }
    ::close(listener);
    result = fd;
  } else {
    if ((result = receive_fd(connection)) < 0)
      problem = "no descriptor received over the Unix socket";
    ::close(connection);
  }
  if (auto error = agree_on_error(comm, problem); !error.empty())
    throw run_error(fmt::format("cannot share a file descriptor: {}", error));
  return result;
}

}  // namespace

shared_fd share_fd(MPI_Comm comm, int root, int fd, bool force_socket) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  long source[2] = {static_cast<long>(::getpid()), fd};
  MPI_Bcast(source, 2, MPI_LONG, root, comm);
  std::string problem;
  int mine = fd;
  if (rank != root)
    mine = force_socket ? -1
                        : import_with_pidfd(static_cast<pid_t>(source[0]),
                                            static_cast<int>(source[1]), problem);
  // Everyone takes the same path: a mix would leave the root serving a socket
  // that only some connect to.
  int failed = mine < 0 ? 1 : 0, any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, comm);
  if (!any_failed) return {mine, fd_passing::pidfd_getfd};
  if (rank != root && mine >= 0) ::close(mine);
  return {share_over_socket(comm, root, fd), fd_passing::unix_socket};
}

}  // namespace halox::ipc
