// Builds a transport choice under the router. Apart from the registry (which
// knows the entries) and the router (which knows the parts), so that neither
// includes the other.
#include <memory>

#include "halox/common/error.hpp"
#include "halox/extend/registry.hpp"
#include "transport/core/router.hpp"

namespace halox {

namespace {

// The entry's implementation for the fields' memory (host or CUDA device).
routed_part_maker implementation(const transport_entry& entry, const transport_context& ctx) {
  const bool device = ctx.fields.device;
  const transport_factory& make = device ? entry.make_device : entry.make;
  if (!make)
    throw usage_error(entry.name + (device ? " moves host memory only" : " moves device memory only"));
  return {entry.name, make};
}

}  // namespace

std::unique_ptr<transport> make_transport(const transport_choice& choice,
                                          const transport_context& ctx) {
  if (auto why = choice.unavailable(); !why.empty()) throw usage_error(why);
  if (!choice.routed())
    return std::make_unique<routed_transport>(ctx, implementation(choice.local(), ctx));
  return std::make_unique<routed_transport>(ctx, implementation(choice.local(), ctx),
                                            implementation(choice.remote(), ctx));
}

}  // namespace halox
