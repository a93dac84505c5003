#include "halox_programs/self_copy_reference.hpp"


namespace halox {

box mirrored_source(const local_grid& grid, const box& halo_box) {
  box from = halo_box;
  for (int d = 0; d < 3; ++d) {
    const int n = grid.interior[d];
    const int shift = halo_box.hi[d] <= 0 ? n : halo_box.lo[d] >= n ? -n : 0;
    from.lo[d] += shift;
    from.hi[d] += shift;
  }
  return from;
}

copy_list self_copy_reference(const exchange_plan& plan, std::byte* const* fields) {
  copy_list copies;
  for (const stage& st : plan.stages) {
    // Field by field, as the single-copy transports land a stage: the -x and
    // +x boxes of a field walk their rows together.
    for (int f : fields_filled(st)) {
      std::byte* field = fields[f];
      const local_grid& grid = plan.grid_of(f);
      const size_t element_bytes = plan.element_bytes_of(f);
      for (const auto& m : st.recvs)
        for (const auto& b : m.boxes)
          if (b.field == f)
            copies.add(field_copy(field, grid, mirrored_source(grid, b.region), field, grid,
                                  b.region, element_bytes));
      for (const auto& c : st.copies)
        for (size_t i = 0; i < c.from.size() && i < c.to.size(); ++i)
          if (c.to[i].field == f)
            copies.add(field_copy(fields[c.from[i].field], plan.grid_of(c.from[i].field),
                                  c.from[i].region, fields[c.to[i].field], grid, c.to[i].region,
                                  element_bytes));
    }
  }
  return copies;
}

}  // namespace halox
