#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "halox_programs/memory.hpp"

namespace {

// The VmFlags line of the mapping that holds `address` in /proc/self/smaps
// ("hg" there: advised MADV_HUGEPAGE); empty when there is no such file.
std::string vm_flags_of(const void* address) {
  std::ifstream smaps("/proc/self/smaps");
  const auto where = reinterpret_cast<std::uintptr_t>(address);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    std::uintptr_t from = 0, to = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> from >> dash >> to && dash == '-' && line.find(':') > line.find(' '))
      inside = from <= where && where < to;
    else if (inside && line.rfind("VmFlags:", 0) == 0)
      return line;
  }
  return {};
}

bool advised_huge(const void* address) {
  const std::string flags = vm_flags_of(address);
  if (flags.empty()) throw std::runtime_error("no VmFlags in /proc/self/smaps");
  return flags.find(" hg") != std::string::npos;
}

}  // namespace

TEST(MappedBuffer, SystemPagesTakeNoAdviceHugePagesDo) {
  const int on_the_stack = 0;
  if (vm_flags_of(&on_the_stack).empty())
    GTEST_SKIP() << "no /proc/self/smaps with VmFlags here";
  const halox::mapped_buffer plain(size_t{8} << 20, halox::page_size::system);
  const halox::mapped_buffer huge(size_t{8} << 20, halox::page_size::huge);
  EXPECT_FALSE(advised_huge(plain.data()));
  EXPECT_TRUE(advised_huge(huge.data()));
  EXPECT_EQ(plain.data()[plain.size() - 1], std::byte{0});
}

TEST(MappedBuffer, PageSizeNames) {
  for (auto pages : {halox::page_size::system, halox::page_size::huge})
    EXPECT_EQ(halox::page_size_from(halox::to_string(pages)), pages);
  EXPECT_THROW(halox::page_size_from("big"), std::invalid_argument);
}
