#include "halox_programs/ipc/map.hpp"

#include <fmt/core.h>

#include <exception>
#include <memory>

namespace halox::ipc {

map_copy::map_copy(ipc_context& context, bool cached, bool populate)
    : copy_mechanism(context), cached_(cached), mapper_(context.source_arena(), populate) {
  if (cached_ && !context.is_owner())
    cache_ = std::make_unique<mapping_cache>(mapper_, context.source_arena().epoch_word());
}

void map_copy::on_prepare() {
  if (cache_) cache_->clear();  // the first copy after prepare() is the cold one
}

void copy_mechanism::copy_through_mapping(region_mapper& mapper, mapping_cache* cache) {
  try {
    if (cache) {
      const std::byte* view = cache->lookup(owner_source_offset_, layout_.extent());
      copy_blocks(destination_, layout_.stride, view, layout_.stride, layout_.block, layout_.count);
    } else {
      scoped_mapping view(mapper, owner_source_offset_, layout_.extent());
      copy_blocks(destination_, layout_.stride, view.data(), layout_.stride, layout_.block,
                  layout_.count);
    }
  } catch (const std::exception& e) {
    fail(e.what());
  }
}

void map_copy::on_copy() {
  if (context_.is_owner()) return;
  copy_through_mapping(mapper_, cache_.get());
}

}  // namespace halox::ipc
