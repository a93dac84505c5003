// A transport written outside the library, against the installed headers'
// API only (extend/transport.hpp, extend/registry.hpp, extend/pack.hpp), registered with
// halox::register_transport and run through the verification matrix, alone
// and as the off-node part of a routing.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "halox/common/error.hpp"
#include "halox/exchange.hpp"
#include "halox/extend/pack.hpp"
#include "halox/extend/transport.hpp"
#include "halox/extend/registry.hpp"
#include "halox_programs/verify.hpp"

using namespace halox;

namespace {

// The plainest message transport: per stage, pack every send into its own
// buffer, MPI_Isend/MPI_Irecv, wait for all, unpack; local copies directly.
class blocking_p2p final : public transport {
 public:
  explicit blocking_p2p(const transport_context& ctx)
      : plan_(ctx.plan), comm_(ctx.comm), fields_(ctx.fields.pointers) {}

  void start(size_t stage) override {
    const auto& s = plan_.stages[stage];
    sends_.assign(s.sends.size(), {});
    recvs_.assign(s.recvs.size(), {});
    requests_.clear();
    for (size_t i = 0; i < s.recvs.size(); ++i) {
      recvs_[i].resize(s.recvs[i].bytes);
      requests_.emplace_back();
      MPI_Irecv(recvs_[i].data(), static_cast<int>(recvs_[i].size()), MPI_BYTE, s.recvs[i].peer,
                s.recvs[i].tag, comm_, &requests_.back());
    }
    for (size_t i = 0; i < s.sends.size(); ++i) {
      sends_[i].resize(s.sends[i].bytes);
      pack(sends_[i].data(), s.sends[i].boxes, fields_.data(), plan_);
      requests_.emplace_back();
      MPI_Isend(sends_[i].data(), static_cast<int>(sends_[i].size()), MPI_BYTE, s.sends[i].peer,
                s.sends[i].tag, comm_, &requests_.back());
    }
    for (const auto& c : s.copies) copy_boxes(c.from, c.to, fields_.data(), plan_);
  }

  void wait(size_t stage) override {
    const auto& s = plan_.stages[stage];
    MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE);
    for (size_t i = 0; i < s.recvs.size(); ++i)
      unpack(recvs_[i].data(), s.recvs[i].boxes, fields_.data(), plan_);
  }

  std::string name() const override { return "test-blocking-p2p"; }

 private:
  const exchange_plan& plan_;
  MPI_Comm comm_;
  std::vector<std::byte*> fields_;
  std::vector<std::vector<std::byte>> sends_, recvs_;
  std::vector<MPI_Request> requests_;
};

// blocking_p2p that counts its calls and says when a stage leaves it nothing to do
// (transport::idle): the router then leaves it alone in that stage.
class counting_idle final : public transport {
 public:
  explicit counting_idle(const transport_context& ctx) : plan_(ctx.plan), inner_(ctx) {}
  void start(size_t stage) override {
    ++calls;
    inner_.start(stage);
  }
  void wait(size_t stage) override {
    ++calls;
    inner_.wait(stage);
  }
  bool idle(size_t stage) const override {
    const auto& s = plan_.stages[stage];
    return s.sends.empty() && s.recvs.empty() && s.copies.empty();
  }
  std::string name() const override { return "test-counting-idle"; }
  static inline long calls = 0;

 private:
  const exchange_plan& plan_;
  blocking_p2p inner_;
};

void register_once() {
  static const bool registered = [] {
    register_transport({.name = "test-blocking-p2p",
                        .summary = "a transport of the test suite: pack, Isend/Irecv, unpack",
                        .reach = transport_reach::any_peer,
                        .make = [](const transport_context& ctx) -> std::unique_ptr<transport> {
                          return std::make_unique<blocking_p2p>(ctx);
                        }});
    register_transport({.name = "test-counting-idle",
                        .summary = "a transport of the test suite: counts its calls",
                        .reach = transport_reach::any_peer,
                        .make = [](const transport_context& ctx) -> std::unique_ptr<transport> {
                          return std::make_unique<counting_idle>(ctx);
                        }});
    return true;
  }();
  (void)registered;
}

// Every cell after two exchanges, agreed by all ranks: the first wrong one, or "".
template <class T>
std::string matrix_case(const transport_choice& choice, algorithm alg, field_grouping grouping,
                        bool periodic, int halo, int nfields) {
  const std::array<bool, 3> wrap{periodic, periodic, periodic};
  auto d = make_cart_decomposition(MPI_COMM_WORLD, {0, 0, 0}, wrap, false);
  const ivec3 interior{6, 5, 4};
  local_grid grid(interior, halo_widths::uniform(halo));
  std::vector<std::vector<T>> memory(static_cast<size_t>(nfields), std::vector<T>(grid.points()));
  std::vector<T*> fields;
  for (auto& m : memory) fields.push_back(m.data());
  verify_context ctx{grid, subdomain_per_rank(d, interior), d.periodic(), alg};
  halo_exchange ex(d, grid, fields, {.alg = alg, .grouping = grouping, .transport = choice});
  std::string wrong;
  for (int epoch = 0; epoch < 2 && wrong.empty(); ++epoch) {
    fill_fields(fields, ctx, epoch);
    ex.exchange();
    size_t total = 0;
    auto bad = check_fields(fields, ctx, epoch, 1, &total);
    if (total > 0) wrong = describe(bad[0]);
  }
  return agree_on_error(MPI_COMM_WORLD, wrong);
}

TEST(CustomTransport, RegisteredTransportIsListedAndParsed) {
  register_once();
  EXPECT_EQ(find_transport("test-blocking-p2p").reach, transport_reach::any_peer);
  EXPECT_NE(list_transports().find("test-blocking-p2p"), std::string::npos);
  EXPECT_EQ(parse_transport_choice("test-blocking-p2p").name(), "test-blocking-p2p");
  EXPECT_EQ(parse_transport_choice("shm+test-blocking-p2p").name(), "shm+test-blocking-p2p");
}

TEST(CustomTransport, BadRegistrationsAreUsageErrors) {
  register_once();
  auto entry = [](std::string name) {
    return transport_entry{.name = std::move(name), .make = [](const transport_context& ctx) {
                             return std::unique_ptr<transport>(std::make_unique<blocking_p2p>(ctx));
                           }};
  };
  EXPECT_THROW(register_transport(entry("test-blocking-p2p")), usage_error);  // taken
  EXPECT_THROW(register_transport(entry("mpi-p2p")), usage_error);            // a built-in's
  EXPECT_THROW(register_transport(entry("a+b")), usage_error);
  EXPECT_THROW(register_transport(entry("")), usage_error);
  EXPECT_THROW(register_transport(entry("auto")), usage_error);
  transport_entry no_constructor;
  no_constructor.name = "no-constructor";
  EXPECT_THROW(register_transport(no_constructor), usage_error);
  EXPECT_THROW(parse_transport_choice("mpi-p2p+shm"), usage_error);  // same-node as REMOTE
}

TEST(CustomTransport, PassesTheVerificationMatrix) {
  register_once();
  std::vector<std::string> choices{"test-blocking-p2p"};
  // With node groups some neighbours are off the node: the routing's REMOTE part carries them.
  const char* groups = std::getenv("HALOX_RANKS_PER_NODE");
  if (groups && *groups && std::string(groups) != "0") choices.push_back("shm+test-blocking-p2p");
  for (const auto& text : choices) {
    const transport_choice choice = parse_transport_choice(text);
    for (auto alg : {algorithm::standard, algorithm::staged, algorithm::faces})
      for (auto grouping : {field_grouping::compact, field_grouping::sequence})
        for (bool periodic : {true, false})
          for (int halo : {1, 4}) {
            const auto where = [&](const char* type) {
              return text + " " + to_string(alg) + " " + to_string(grouping) + " " +
                     (periodic ? "periodic" : "open") + " halo " + std::to_string(halo) + " " +
                     type;
            };
            EXPECT_EQ(matrix_case<double>(choice, alg, grouping, periodic, halo, 3), "")
                << where("double");
            EXPECT_EQ(matrix_case<float>(choice, alg, grouping, periodic, halo, 1), "")
                << where("float");
          }
  }
}

// A part with nothing to do in a stage on this rank is not called: with every neighbour on the
// node, the routing's off-node part never is; alone, the transport is called where its stages
// hold messages or copies, and either way every halo cell is right.
TEST(CustomTransport, TheRouterLeavesAPartIdleInAStageAlone) {
  register_once();
  const char* groups = std::getenv("HALOX_RANKS_PER_NODE");
  const bool one_node = !groups || !*groups || std::string(groups) == "0";
  for (const char* text : {"shm+test-counting-idle", "test-counting-idle"}) {
    const transport_choice choice = parse_transport_choice(text);
    counting_idle::calls = 0;
    EXPECT_EQ(matrix_case<double>(choice, algorithm::standard, field_grouping::compact, true, 1, 2),
              "")
        << text;
    const bool routed = std::string(text).starts_with("shm+");
    if (routed && one_node) EXPECT_EQ(counting_idle::calls, 0) << text;
    // Periodic: every rank has a neighbour or copies its own halos.
    if (!routed) EXPECT_GT(counting_idle::calls, 0) << text;
  }
}

}  // namespace
