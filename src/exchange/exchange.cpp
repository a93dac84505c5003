#include "halox/exchange.hpp"

#include <stdexcept>

namespace halox {

halo_exchange::halo_exchange(const decomposition& decomp, const local_grid& grid, element_type type,
                             std::vector<void*> fields, const exchange_options& options)
    : options_(options),
      plan_(std::make_unique<exchange_plan>(make_plan(decomp, grid, static_cast<int>(fields.size()),
                                                      element_size(type), options.alg,
                                                      options.mode))) {
  for (void* f : fields) fields_.push_back(static_cast<std::byte*>(f));
  transport_ = make_transport(options.transport, *plan_, decomp.comm(), fields_);
}

halo_exchange::halo_exchange(halo_exchange&&) noexcept = default;
halo_exchange& halo_exchange::operator=(halo_exchange&&) noexcept = default;
halo_exchange::~halo_exchange() = default;

void halo_exchange::start() {
  if (started_) throw std::logic_error("halo_exchange::start called twice without wait");
  started_ = true;
  if (!plan_->stages.empty()) transport_->start(0);
}

void halo_exchange::wait() {
  if (!started_) throw std::logic_error("halo_exchange::wait called without start");
  started_ = false;
  for (size_t s = 0; s < plan_->stages.size(); ++s) {
    if (s > 0) transport_->start(s);
    transport_->wait(s);
  }
}

}  // namespace halox
