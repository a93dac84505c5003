#include "transport/ucx/ucx.hpp"

#include <fmt/core.h>
#include <poll.h>
#include <ucp/api/ucp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <new>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "common/stage_timer.hpp"
#include "common/yielding_mpi.hpp"
#include "halox/common/error.hpp"
#include "halox/extend/pack.hpp"
#include "transport/common/message_buffers.hpp"
#include "transport/core/names.hpp"

namespace halox {

namespace {

// MPI tag of the set-up messages; they complete inside the constructor, before
// any halo message uses the communicator.
constexpr int setup_tag = 32000;
// Idle polls (each followed by a yield) before an oversubscribed wait sleeps
// on the worker's event fd, and the longest sleep: a bound, in case a
// transport signals no event for some completion.
constexpr unsigned idle_polls_before_sleep = 64;
constexpr int longest_sleep_ms = 1;
// How long closing the endpoints may take at the end.
constexpr auto close_time_limit = std::chrono::seconds(2);

std::string ucx_failure(std::string_view what, ucs_status_t status) {
  std::string text = fmt::format("{} failed: {}", what, ucs_status_string(status));
  if (const char* tls = std::getenv("UCX_TLS")) text += fmt::format(" (UCX_TLS={})", tls);
  return text;
}

void check(ucs_status_t status, std::string_view what) {
  if (status != UCS_OK) throw run_error(ucx_failure(what, status));
}

// The process's UCP context and worker, shared by every exchange, with one
// endpoint per peer worker. Creating a context and worker costs milliseconds
// and the benchmark and tests build exchanges by the hundred, so they are
// made once, on first use, and released when MPI_Finalize begins (or at exit
// when no MPI was running).
class ucx_runtime {
 public:
  // Throws run_error with UCX's reason when UCX cannot start here.
  static std::shared_ptr<ucx_runtime> get();
  ucx_runtime(const ucx_runtime&) = delete;
  ucx_runtime& operator=(const ucx_runtime&) = delete;
  ~ucx_runtime();

  ucp_worker_h worker() const { return worker_; }
  std::string address() const { return {reinterpret_cast<const char*>(address_), address_length_}; }
  // The endpoint to the worker at `peer_address`, created on first request.
  ucp_ep_h endpoint(const std::string& peer_address);
  // A fresh channel id: the high half of the tags of one peer's messages.
  uint32_t new_channel() { return ++channels_; }
  bool can_sleep() const { return event_fd_ >= 0; }
  // Returns when the worker has an event or after `milliseconds`; at once
  // when events are already pending (then progress first).
  void sleep(int milliseconds);

 private:
  ucx_runtime();
  static std::shared_ptr<ucx_runtime>& current();
  static int release(MPI_Comm, int keyval, void*, void*);
  void drain_unexpected();

  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  ucp_address_t* address_ = nullptr;
  size_t address_length_ = 0;
  int event_fd_ = -1;
  std::map<std::string, ucp_ep_h> endpoints_;  // by the peer's worker address
  uint32_t channels_ = 0;
};

std::shared_ptr<ucx_runtime>& ucx_runtime::current() {
  static std::shared_ptr<ucx_runtime> runtime;
  return runtime;
}

// MPI_Finalize deletes MPI_COMM_SELF's attributes first, while MPI still
// works: the runtime goes then, unless an exchange still holds it.
int ucx_runtime::release(MPI_Comm, int keyval, void*, void*) {
  current().reset();
  MPI_Comm_free_keyval(&keyval);
  return MPI_SUCCESS;
}

std::shared_ptr<ucx_runtime> ucx_runtime::get() {
  auto& runtime = current();
  if (runtime) return runtime;
  runtime.reset(new ucx_runtime());
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) {
    int keyval = MPI_KEYVAL_INVALID;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, release, &keyval, nullptr);
    MPI_Comm_set_attr(MPI_COMM_SELF, keyval, nullptr);
  }
  return runtime;
}

ucx_runtime::ucx_runtime() {
  ucp_config_t* config = nullptr;
  check(ucp_config_read(nullptr, nullptr, &config), "reading the UCX configuration");
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  // WAKEUP lets oversubscribed waits sleep on the worker's event fd (without
  // one they only yield).
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
  ucs_status_t status = ucp_init(&params, config, &context_);
  ucp_config_release(config);
  check(status, "ucp_init");
  try {
    ucp_worker_params_t worker_params{};
    worker_params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    worker_params.thread_mode = UCS_THREAD_MODE_SINGLE;
    check(ucp_worker_create(context_, &worker_params, &worker_), "ucp_worker_create");
    check(ucp_worker_get_address(worker_, &address_, &address_length_), "ucp_worker_get_address");
    if (ucp_worker_get_efd(worker_, &event_fd_) != UCS_OK) event_fd_ = -1;
  } catch (...) {
    if (address_) ucp_worker_release_address(worker_, address_);
    if (worker_) ucp_worker_destroy(worker_);
    ucp_cleanup(context_);
    throw;
  }
}

ucx_runtime::~ucx_runtime() {
  drain_unexpected();
  // Flush-close every endpoint (no halo message is outstanding by now), with
  // a time limit: a peer gone first must not keep this process from ending.
  ucp_request_param_t close{};
  close.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  close.flags = 0;
  std::vector<void*> closing;
  for (auto& [address, ep] : endpoints_) {
    ucs_status_ptr_t request = ucp_ep_close_nbx(ep, &close);
    if (UCS_PTR_IS_PTR(request)) closing.push_back(request);
  }
  const auto deadline = std::chrono::steady_clock::now() + close_time_limit;
  for (void* request : closing) {
    while (ucp_request_check_status(request) == UCS_INPROGRESS &&
           std::chrono::steady_clock::now() < deadline)
      ucp_worker_progress(worker_);
    ucp_request_free(request);
  }
  ucp_worker_release_address(worker_, address_);
  ucp_worker_destroy(worker_);
  ucp_cleanup(context_);
}

// With every exchange gone, a message still unmatched belongs to one that was
// abandoned (a wait that timed out, an exchange destroyed between start and
// wait): receive and drop it, rather than have UCX warn about it at exit.
void ucx_runtime::drain_unexpected() {
  std::vector<std::byte> scratch;
  const auto deadline = std::chrono::steady_clock::now() + close_time_limit;
  while (std::chrono::steady_clock::now() < deadline) {
    while (ucp_worker_progress(worker_) != 0) {
    }
    ucp_tag_recv_info_t info{};
    ucp_tag_message_h message = ucp_tag_probe_nb(worker_, 0, 0, 1, &info);
    if (!message) return;
    scratch.resize(info.length);
    ucp_request_param_t param{};
    ucs_status_ptr_t request =
        ucp_tag_msg_recv_nbx(worker_, scratch.data(), info.length, message, &param);
    if (!UCS_PTR_IS_PTR(request)) continue;
    while (ucp_request_check_status(request) == UCS_INPROGRESS &&
           std::chrono::steady_clock::now() < deadline)
      ucp_worker_progress(worker_);
    ucp_request_free(request);
  }
}

ucp_ep_h ucx_runtime::endpoint(const std::string& peer_address) {
  if (auto known = endpoints_.find(peer_address); known != endpoints_.end()) return known->second;
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  params.address = reinterpret_cast<const ucp_address_t*>(peer_address.data());
  params.err_mode = UCP_ERR_HANDLING_MODE_NONE;
  ucp_ep_h ep = nullptr;
  check(ucp_ep_create(worker_, &params, &ep), "ucp_ep_create");
  endpoints_.emplace(peer_address, ep);
  return ep;
}

void ucx_runtime::sleep(int milliseconds) {
  if (ucp_worker_arm(worker_) != UCS_OK) return;  // UCS_ERR_BUSY: events to progress first
  pollfd fd{event_fd_, POLLIN, 0};
  poll(&fd, 1, milliseconds);
}

ucp_tag_t tag_of(uint32_t channel, int message_tag) {
  return (static_cast<ucp_tag_t>(channel) << 32) | static_cast<uint32_t>(message_tag);
}

// One UCP operation; the completion callback fills it in.
struct operation {
  void* request = nullptr;  // UCP's, until freed
  bool done = true;
  bool handled = true;  // unpacked (receives) or released
  ucs_status_t status = UCS_OK;
  size_t length = 0;  // received bytes
};

// Releases an operation that completed; true the first time it is seen done.
bool settle(operation& op) {
  if (op.handled || !op.done) return false;
  if (op.request) ucp_request_free(op.request);
  op.request = nullptr;
  op.handled = true;
  return true;
}

void on_send(void*, ucs_status_t status, void* user_data) {
  auto* op = static_cast<operation*>(user_data);
  op->status = status;
  op->done = true;
}

void on_receive(void*, ucs_status_t status, const ucp_tag_recv_info_t* info, void* user_data) {
  auto* op = static_cast<operation*>(user_data);
  op->status = status;
  if (status == UCS_OK) op->length = info->length;
  op->done = true;
}

// What one peer needs: the channel its messages to us carry, the one ours to
// it carry, and the endpoint.
struct peer_link {
  int rank = -1;
  uint32_t receive_channel = 0, send_channel = 0;
  ucp_ep_h ep = nullptr;
};

class ucx_transport final : public transport {
 public:
  explicit ucx_transport(const transport_context& ctx);
  ~ucx_transport() override;
  void start(size_t stage) override;
  void wait(size_t stage) override;
  std::string name() const override { return std::string(transport_names::ucx); }
  std::string settings() const override {
    return fetch_ahead_
               ? std::string(transport_names::ucx) + ": " + describe_fetch_ahead(*fetch_ahead_)
               : std::string();
  }
  void tuning_as_built(transport_tuning& tuning) const override {
    if (fetch_ahead_) tuning.ucx.fetch_ahead = fetch_ahead_->on;
  }

 private:
  struct stage_operations {  // by message (message_buffers.hpp)
    std::vector<ucp_tag_t> recv_tags, send_tags;
    std::vector<ucp_ep_h> send_endpoints;
    std::vector<operation> recvs, sends;
  };

  std::vector<peer_link> connect(MPI_Comm comm, std::string& problem);
  void address(const std::vector<peer_link>& links);
  // Unpacks landed receives and releases completed sends; true when the stage is complete.
  bool land(size_t stage);
  [[noreturn]] void fail(const message& m, std::string_view from_or_to, ucs_status_t status) const;

  const exchange_plan& plan_;
  const wait_policy& waits_;
  int rank_ = 0;
  std::shared_ptr<ucx_runtime> ucx_;  // null when the plan part has no peer
  std::unique_ptr<message_buffers> buffers_;
  std::optional<fetch_ahead_choice> fetch_ahead_;  // empty: small halos, nothing fetched ahead
  std::vector<stage_operations> stages_;
};

ucx_transport::ucx_transport(const transport_context& ctx) : plan_(ctx.plan), waits_(ctx.waits) {
  MPI_Comm_rank(ctx.comm, &rank_);
  std::string problem;
  auto links = connect(ctx.comm, problem);
  // Every rank learns whether all connected: none is left waiting for a peer
  // that failed to start.
  require_all(ctx.comm, problem);
  buffers_ = std::make_unique<message_buffers>(ctx.plan, ctx.fields);
  address(links);
  fetch_ahead_ = buffers_->choose_fetch_ahead(*this, ctx.plan, ctx.tuning.ucx.fetch_ahead,
                                              "tuning.ucx.fetch_ahead", ctx.comm);
}

// Tells every distinct peer our worker address and the channel we receive
// its messages on, learns the same from it, and gets an endpoint to it.
std::vector<peer_link> ucx_transport::connect(MPI_Comm comm, std::string& problem) {
  std::vector<int> peers;
  for (const auto& s : plan_.stages) {
    for (const auto& m : s.sends) peers.push_back(m.peer);
    for (const auto& m : s.recvs) peers.push_back(m.peer);
  }
  std::sort(peers.begin(), peers.end());
  peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  if (peers.empty()) return {};

  std::string address;
  try {
    ucx_ = ucx_runtime::get();
    address = ucx_->address();
  } catch (const std::exception& e) {
    problem = fmt::format("rank {}: {}: {}", rank_, transport_names::ucx, e.what());
  }
  // Set-up message: [channel (4 bytes)][worker address]; an empty address
  // says this rank could not start UCX.
  std::vector<peer_link> links(peers.size());
  std::vector<std::string> outgoing(peers.size());
  std::vector<MPI_Request> sends(peers.size());
  for (size_t i = 0; i < peers.size(); ++i) {
    links[i].rank = peers[i];
    links[i].receive_channel = ucx_ ? ucx_->new_channel() : 0;
    outgoing[i].assign(reinterpret_cast<const char*>(&links[i].receive_channel), sizeof(uint32_t));
    outgoing[i] += address;
    MPI_Isend(outgoing[i].data(), static_cast<int>(outgoing[i].size()), MPI_BYTE, peers[i],
              setup_tag, comm, &sends[i]);
  }
  for (auto& link : links) {
    MPI_Status status;
    yielding_probe(link.rank, setup_tag, comm, &status);
    int bytes = 0;
    MPI_Get_count(&status, MPI_BYTE, &bytes);
    std::string incoming(static_cast<size_t>(bytes), '\0');
    MPI_Recv(incoming.data(), bytes, MPI_BYTE, link.rank, setup_tag, comm, MPI_STATUS_IGNORE);
    if (incoming.size() < sizeof(uint32_t)) {
      problem = fmt::format("rank {}: {}: a malformed set-up message from rank {}", rank_,
                            transport_names::ucx, link.rank);
      continue;
    }
    std::copy_n(incoming.data(), sizeof(uint32_t), reinterpret_cast<char*>(&link.send_channel));
    if (!ucx_ || !problem.empty()) continue;
    if (incoming.size() == sizeof(uint32_t)) {
      problem = fmt::format("rank {}: {}: rank {} could not start UCX", rank_, transport_names::ucx,
                            link.rank);
      continue;
    }
    try {
      link.ep = ucx_->endpoint(incoming.substr(sizeof(uint32_t)));
    } catch (const std::exception& e) {
      problem = fmt::format("rank {}: {}: connecting to rank {}: {}", rank_, transport_names::ucx,
                            link.rank, e.what());
    }
  }
  MPI_Waitall(static_cast<int>(sends.size()), sends.data(), MPI_STATUSES_IGNORE);
  return links;
}

// Tags and endpoints fixed per message.
void ucx_transport::address(const std::vector<peer_link>& links) {
  auto link_of = [&](int peer) -> const peer_link& {
    return *std::find_if(links.begin(), links.end(),
                         [&](const peer_link& l) { return l.rank == peer; });
  };
  for (const auto& s : buffers_->stages()) {
    stage_operations ops;
    for (const auto& f : s.recvs)
      ops.recv_tags.push_back(tag_of(link_of(f.m->peer).receive_channel, f.m->tag));
    for (const auto& f : s.sends) {
      ops.send_tags.push_back(tag_of(link_of(f.m->peer).send_channel, f.m->tag));
      ops.send_endpoints.push_back(link_of(f.m->peer).ep);
    }
    ops.recvs.resize(s.recvs.size());
    ops.sends.resize(s.sends.size());
    stages_.push_back(std::move(ops));
  }
}

ucx_transport::~ucx_transport() {
  // Operations still in flight (a wait gave up): receives are cancelled, all
  // are handed back to UCX, which then calls no callback. UCX may still be
  // moving bytes of such an operation, so its buffer is not freed.
  bool in_flight = false;
  for (auto& s : stages_) {
    for (auto& op : s.recvs)
      if (op.request) {
        if (!op.done) {
          ucp_request_cancel(ucx_->worker(), op.request);
          in_flight = true;
        }
        ucp_request_free(op.request);
      }
    for (auto& op : s.sends)
      if (op.request) {
        in_flight = in_flight || !op.done;
        ucp_request_free(op.request);
      }
  }
  // UCX may still move bytes of an operation in flight: keep its buffer.
  if (in_flight) (void)buffers_.release();
}

void ucx_transport::fail(const message& m, std::string_view from_or_to, ucs_status_t status) const {
  throw run_error(fmt::format("rank {}: {} failed: {}", rank_,
                              describe_message(m, from_or_to, transport_names::ucx),
                              ucs_status_string(status)));
}

void ucx_transport::start(size_t stage_index) {
  const buffered_stage& s = buffers_->stages()[stage_index];
  stage_operations& ops = stages_[stage_index];
  // A stage whose messages are still in flight (its wait threw) cannot start again.
  for (const auto* list : {&ops.recvs, &ops.sends})
    for (const auto& op : *list)
      if (op.request)
        throw std::logic_error(
            fmt::format("{}: a stage started again before it completed", transport_names::ucx));
  for (size_t i = 0; i < s.recvs.size(); ++i) {
    operation& op = ops.recvs[i];
    op = {nullptr, false, false, UCS_OK, 0};
    // Always a request and a callback: UCX 1.13 leaves recv_info unset when
    // a receive completes at once, and the callback reports the length.
    ucp_request_param_t param{};
    param.op_attr_mask =
        UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    param.cb.recv = on_receive;
    param.user_data = &op;
    ucs_status_ptr_t request =
        ucp_tag_recv_nbx(ucx_->worker(), s.recvs[i].buffer, s.recvs[i].m->bytes, ops.recv_tags[i],
                         ~ucp_tag_t{0}, &param);
    if (UCS_PTR_IS_ERR(request)) fail(*s.recvs[i].m, "from", UCS_PTR_STATUS(request));
    op.request = request;
  }
  for (size_t i = 0; i < s.sends.size(); ++i) {
    {
      const stage_timer::part_span packing(stage_timer::pack);
      s.sends[i].copies.run();
    }
    operation& op = ops.sends[i];
    op = {nullptr, false, false, UCS_OK, 0};
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send = on_send;
    param.user_data = &op;
    ucs_status_ptr_t request = ucp_tag_send_nbx(ops.send_endpoints[i], s.sends[i].buffer,
                                                s.sends[i].m->bytes, ops.send_tags[i], &param);
    if (UCS_PTR_IS_ERR(request)) fail(*s.sends[i].m, "to", UCS_PTR_STATUS(request));
    if (request)
      op.request = request;
    else
      op.done = true;
  }
  s.self_copies.run();
}

bool ucx_transport::land(size_t stage_index) {
  const buffered_stage& s = buffers_->stages()[stage_index];
  stage_operations& ops = stages_[stage_index];
  bool complete = true;
  for (size_t i = 0; i < ops.recvs.size(); ++i) {
    operation& op = ops.recvs[i];
    complete &= op.handled || op.done;
    if (!settle(op)) continue;
    const message& m = *s.recvs[i].m;
    if (op.status != UCS_OK) fail(m, "from", op.status);
    if (op.length != m.bytes)
      throw run_error(fmt::format("rank {}: {} carried {} bytes, {} expected", rank_,
                                  describe_message(m, "from", transport_names::ucx), op.length,
                                  m.bytes));
    s.recvs[i].copies.run();
  }
  for (size_t i = 0; i < ops.sends.size(); ++i) {
    operation& op = ops.sends[i];
    complete &= op.handled || op.done;
    if (settle(op) && op.status != UCS_OK) fail(*s.sends[i].m, "to", op.status);
  }
  return complete;
}

void ucx_transport::wait(size_t stage_index) {
  const buffered_stage& s = buffers_->stages()[stage_index];
  if (s.recvs.empty() && s.sends.empty()) return;
  stage_operations& ops = stages_[stage_index];
  ucp_worker_h worker = ucx_->worker();
  // More ranks than cores: a rank that polls steals the core its peer needs
  // to send; yield each idle poll (wait_policy) and soon sleep until UCX
  // signals an event.
  const bool sleep_when_idle = waits_.oversubscribed && ucx_->can_sleep();
  unsigned idle = 0;
  waits_.spin_until(
      [&] {
        if (ucp_worker_progress(worker) != 0) {
          idle = 0;
        } else if (sleep_when_idle && ++idle >= idle_polls_before_sleep) {
          ucx_->sleep(longest_sleep_ms);
          idle = 0;
        }
        return land(stage_index);
      },
      [&] {
        for (size_t i = 0; i < ops.recvs.size(); ++i)
          if (!ops.recvs[i].done)
            return describe_message(*s.recvs[i].m, "from", transport_names::ucx);
        for (size_t i = 0; i < ops.sends.size(); ++i)
          if (!ops.sends[i].done)
            return describe_message(*s.sends[i].m, "to", transport_names::ucx);
        return fmt::format("{} messages", transport_names::ucx);
      });
}

}  // namespace

std::string ucx_transport_unavailable() {
  // Asked often (parsing, listing, tests): UCX is probed once per process.
  static const std::string why = [] {
    try {
      ucx_runtime::get();
      return std::string();
    } catch (const std::exception& e) {
      return fmt::format("UCX cannot start here: {}", e.what());
    }
  }();
  return why;
}

std::unique_ptr<transport> make_ucx_transport(const transport_context& ctx) {
  return std::make_unique<ucx_transport>(ctx);
}

}  // namespace halox
