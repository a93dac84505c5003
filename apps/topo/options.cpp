// halox-topo's options: the layout options of the programs, less those that
// need running ranks, and the nodes and exchange to plan for.
#include "halox/common/error.hpp"
#include "topo_program.hpp"

namespace halox::topo_program {

void add_options(CLI::App& app, topo_options& o) {
  add_decomposition_options(app, o.layout);
  // Node groups are given by --nodes and --ranks-per-node here.
  app.remove_option(app.get_option("--ranks-per-node"));
  app.remove_option(app.get_option("--print"));
  app.remove_option(app.get_option("--decomposition"));
  app.remove_option(app.get_option("--reorder"));
  app.add_option("--nodes", o.nodes, "Number of nodes")
      ->check(CLI::Range(1, 1 << 30))
      ->capture_default_str();
  app.add_option("--ranks-per-node", o.ranks_per_node, "Ranks per node (default: one per core)")
      ->check(CLI::Range(1, 1 << 30));
  app.add_option("--domain", o.domain, "Cells per rank NX NY NZ")
      ->expected(3)
      ->capture_default_str();
  app.add_option("--halo", o.halo, "Halo width")
      ->check(CLI::Range(0, 1 << 30))
      ->capture_default_str();
  app.add_option("--fields", o.fields, "Number of fields")
      ->check(CLI::Range(1, 1 << 30))
      ->capture_default_str();
  app.add_option("--element-size", o.element_size, "Bytes per cell and field")
      ->check(CLI::Range(1, 1 << 30))
      ->capture_default_str();
  app.add_option("--algorithm", o.algorithm, "standard, staged or faces")->capture_default_str();
  app.add_flag("--print", o.print, "Also print, per layout, the node and core of every rank");
  app.add_flag("--json", o.json, "Print the result as one JSON object (exact byte counts)");
}

exchange_shape exchange_of(const topo_options& o) {
  exchange_shape shape;
  for (int d = 0; d < 3; ++d) {
    if (o.domain[static_cast<size_t>(d)] < 1)
      throw usage_error("--domain entries must be positive");
    shape.domain_per_rank[d] = o.domain[static_cast<size_t>(d)];
  }
  shape.halo = halo_widths::uniform(o.halo);
  shape.nfields = o.fields;
  shape.element_size = static_cast<size_t>(o.element_size);
  shape.alg = parse_algorithm(o.algorithm);
  validate_grid(local_grid(shape.domain_per_rank, shape.halo));
  return shape;
}

}  // namespace halox::topo_program
