// Topologies (synthetic, XML, this machine), placements and assumed bindings.
#include "halox/extend/topology.hpp"

#include <gtest/gtest.h>
#include <hwloc.h>

#include <cstdio>
#include <string>

#include "halox/common/error.hpp"

namespace halox {
namespace {

const std::string betzy = "synthetic:pack:2 numa:4 l3:4 core:4 pu:1";

TEST(Topology, SyntheticBetzyCounts) {
  auto topo = topology::load(betzy);
  EXPECT_FALSE(topo.is_this_machine());
  EXPECT_EQ(topo.count(level::socket), 2);
  EXPECT_EQ(topo.count(level::numa), 8);
  EXPECT_EQ(topo.count(level::l3), 32);
  EXPECT_EQ(topo.count(level::core), 128);
  EXPECT_EQ(topo.count(level::hwthread), 128);
  EXPECT_EQ(topo.count(level::l2), 0);
  EXPECT_EQ(topo.count(level::node), 1);
  EXPECT_EQ(topo.summary(),
            "2 sockets, 8 NUMA nodes, 32 L3 caches, 128 cores, 128 hardware threads");
}

TEST(Topology, PlaceOneCore) {
  auto topo = topology::load(betzy);
  auto p = topo.place({37});
  EXPECT_EQ(p.object[index_of(level::hwthread)], 37);
  EXPECT_EQ(p.object[index_of(level::core)], 37);
  EXPECT_EQ(p.object[index_of(level::l3)], 37 / 4);
  EXPECT_EQ(p.object[index_of(level::numa)], 37 / 16);
  EXPECT_EQ(p.object[index_of(level::socket)], 0);
  EXPECT_EQ(p.object[index_of(level::l2)], -1);  // no L2 in this topology
  EXPECT_FALSE(p.unbound);
  for (bool s : p.spans) EXPECT_FALSE(s);
  EXPECT_EQ(p.binding(), "37");
}

TEST(Topology, PlaceSpanningBinding) {
  auto topo = topology::load(betzy);
  auto p = topo.place({5, 4});  // two cores of L3 1
  EXPECT_EQ(p.pus, (std::vector<int>{4, 5}));
  EXPECT_EQ(p.object[index_of(level::core)], 4);
  EXPECT_TRUE(p.spans[index_of(level::core)]);
  EXPECT_EQ(p.domain(level::core), -2);
  EXPECT_EQ(p.domain(level::l3), 1);
  EXPECT_EQ(p.binding(), "4-5");
  std::vector<int> all;
  for (int i = 0; i < 128; ++i) all.push_back(i);
  EXPECT_TRUE(topo.place(all).unbound);
  EXPECT_THROW(topo.place({}), usage_error);
  EXPECT_THROW(topo.place({128}), usage_error);
}

TEST(Topology, AssumedBindings) {
  auto topo = topology::load(betzy);
  // spread: 64 ranks on 128 cores get two cores each (srun -c 2).
  EXPECT_EQ(topo.assumed_binding(binding_policy::spread, 3, 64), (std::vector<int>{6, 7}));
  EXPECT_EQ(topo.assumed_binding(binding_policy::spread, 3, 128), (std::vector<int>{3}));
  EXPECT_EQ(topo.assumed_binding(binding_policy::core, 3, 64), (std::vector<int>{3}));
  EXPECT_EQ(topo.assumed_binding(binding_policy::hwthread, 5, 8), (std::vector<int>{5}));
  EXPECT_THROW(topo.assumed_binding(binding_policy::core, 0, 129), usage_error);
  EXPECT_THROW(topo.assumed_binding(binding_policy::spread, 0, 48), usage_error);
  EXPECT_THROW(topo.assumed_binding(binding_policy::real, 0, 1), usage_error);  // not this machine

  auto smt = topology::load("synthetic:core:2 pu:2");
  EXPECT_EQ(smt.assumed_binding(binding_policy::core, 1, 2), (std::vector<int>{2, 3}));
  EXPECT_EQ(smt.assumed_binding(binding_policy::spread, 1, 4), (std::vector<int>{1}));
}

TEST(Topology, AssumedPlacementsReplicateNodes) {
  auto topo = topology::load(betzy);
  auto all = assumed_placements(topo, binding_policy::spread, 3, 64);
  ASSERT_EQ(all.size(), 192u);
  EXPECT_EQ(all[70].node, 1);
  EXPECT_EQ(all[70].local_rank, 6);
  EXPECT_EQ(all[70].rank, 70);
  EXPECT_EQ(all[70].object[index_of(level::node)], 1);
  EXPECT_EQ(all[70].object[index_of(level::slot)], 6);
  EXPECT_EQ(all[70].object[index_of(level::core)], 12);
  EXPECT_THROW(assumed_placements(topo, binding_policy::real, 1, 4), usage_error);
}

TEST(Topology, BadSources) {
  EXPECT_THROW(topology::load("synthetic:pack:x"), usage_error);
  EXPECT_THROW(topology::load("/nonexistent/topology.xml"), usage_error);
  try {
    topology::load("/nonexistent/topology.xml");
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/topology.xml"), std::string::npos);
  }
}

TEST(Topology, XmlRoundTrip) {
  // Export a synthetic topology as XML with hwloc and read it back.
  hwloc_topology_t t;
  ASSERT_EQ(hwloc_topology_init(&t), 0);
  ASSERT_EQ(hwloc_topology_set_synthetic(t, "pack:2 l3:2 core:3 pu:2"), 0);
  ASSERT_EQ(hwloc_topology_load(t), 0);
  std::string path = testing::TempDir() + "halox_topology_test.xml";
  ASSERT_EQ(hwloc_topology_export_xml(t, path.c_str(), 0), 0);
  hwloc_topology_destroy(t);
  auto topo = topology::load(path);
  EXPECT_EQ(topo.count(level::socket), 2);
  EXPECT_EQ(topo.count(level::l3), 4);
  EXPECT_EQ(topo.count(level::core), 12);
  EXPECT_EQ(topo.count(level::hwthread), 24);
  EXPECT_EQ(topo.pus_of(level::core, 5), (std::vector<int>{10, 11}));
  std::remove(path.c_str());
}

TEST(Topology, ThisMachine) {
  auto topo = topology::load("");
  EXPECT_TRUE(topo.is_this_machine());
  EXPECT_GE(topo.count(level::hwthread), 1);
  auto pus = topo.current_binding();
  ASSERT_FALSE(pus.empty());
  auto p = topo.place(pus);
  EXPECT_GE(p.object[index_of(level::hwthread)], 0);
}

TEST(Topology, LevelNames) {
  EXPECT_EQ(to_string(level::l3), "l3");
  EXPECT_EQ(object_name(level::numa), "NUMA node");
  EXPECT_EQ(objects_name(level::socket), "sockets");
  EXPECT_EQ(parse_binding_policy("spread"), binding_policy::spread);
  EXPECT_THROW(parse_binding_policy("compact"), usage_error);
}

}  // namespace
}  // namespace halox
