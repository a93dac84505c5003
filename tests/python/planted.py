"""What halox-bench writes into its records beside the times, planted into synthetic records:
each record's (xN) per round against the baseline of its launch and shape, its verdict, and
every record of a launch the closing summaries its run ended with. The verdicts and summaries
are given by each test as halox-bench writes them (the rules are halox-bench's, tested in
tests/unit/closing_summary_test.cpp; test_bench_cli checks a real record carries the fields)."""
import statistics

from halox.records import grouping_key


def shape_of(raw):
    c = raw["config"]
    return (c["type"], c["halo"], c["nfields"], tuple(raw["decomposition"]["dims"]))


def variant_of(raw):
    c = raw["config"]
    return f"{c['transport']}/{c['algorithm']}/{c[grouping_key(c)]}"


def plant(raws, verdicts=None, summary=(), brief=()):
    """One launch's records as halox-bench writes them: stable unless `verdicts` maps the
    record's variant to (causes, reasons, leading cause); `summary` and `brief` are the launch's
    closing summaries. Returns the records."""
    verdicts = verdicts or {}
    bases = {shape_of(r): r for r in raws if variant_of(r) == r["config"]["baseline"]}
    for r in raws:
        base = bases.get(shape_of(r))
        per_round = [b / x for b, x in zip(base["round_medians_s"], r["round_medians_s"])
                     if b > 0 and x > 0] if base else []
        r["ratio_to_baseline"] = {"per_round": per_round, "median": statistics.median(per_round),
                                  "min": min(per_round), "max": max(per_round)} if per_round else None
        causes, reasons, leading = verdicts.get(variant_of(r), ([], [], None))
        low, high = min(per_round or r["round_medians_s"]), max(per_round or r["round_medians_s"])
        r["stable"] = not causes
        r["stability"] = {"rounds_disagree": high / low - 1 if low > 0 else 0.0,
                          "reasons": list(reasons), "causes": list(causes),
                          "leading_cause": leading, "settled": True}
        r["launch_stability"] = {"summary": list(summary), "brief": list(brief)}
    return raws
