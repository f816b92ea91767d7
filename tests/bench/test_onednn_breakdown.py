#!/usr/bin/python3
"""bench/onednn_breakdown: oneDNN verbose lines parsed into per-primitive times, the direct
convolution's flops read from a problem descriptor, and the steady state as a difference."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench",
                                "onednn_breakdown"))
import onednn_breakdown as ob  # noqa: E402

CONV = "mb2_ic256oc256_ih96oh96kh3sh1dh0ph1_iw128ow128kw3sw1dw0pw1"
LAYOUTS = ("src:f32:a:blocked:aBcd16b::f0 wei:f32:a:blocked:ABcd16b16a::f0 bia:undef::undef::: "
           "dst:f32:a:blocked:aBcd16b::f0")
LINES = [  # torch 2.11's oneDNN 3.10, then one line of oneDNN 2's format (a log written before)
    "onednn_verbose,v1,info,oneDNN v3.10.2 (commit f1d471933dc852f956fd05389f9313c7148783d5)",
    "onednn_verbose,v1,primitive,info,template:operation,engine,primitive,implementation,"
    "prop_kind,memory_descriptors,attributes,auxiliary,problem_desc,exec_time",
    f"onednn_verbose,v1,primitive,exec,cpu,convolution,jit:avx512_core,forward_training,"
    f"{LAYOUTS},attr-scratchpad:user,alg:convolution_direct,{CONV},40",
    f"dnnl_verbose,exec,cpu,convolution,jit:avx512_core,forward_training,"
    f"{LAYOUTS},attr-scratchpad:user,alg:convolution_direct,{CONV},60",
    "onednn_verbose,v1,primitive,exec,cpu,reorder,jit:blk,undef,src:f32::blocked:abcd::f0 "
    "dst:f32::blocked:aBcd16b::f0,attr-scratchpad:user,,2x256x96x128,3.5",
    "a line of detkit's own log",
]


class OnednnBreakdownTest(unittest.TestCase):
    def test_direct_flops_of_a_problem_descriptor(self):
        self.assertEqual(ob.direct_flops(CONV), 2 * 2 * 256 * 96 * 128 * 256 * 3 * 3)
        self.assertEqual(ob.direct_flops("g32mb1_ic64oc64_ih8oh8kh3sh1dh0ph1_iw8ow8kw3sw1dw0pw1"),
                         2 * 64 * 64 * 2 * 9)  # 32 groups of 2 input channels
        self.assertEqual(ob.direct_flops("2x256x96x128"), 0)  # a reorder's shape

    def test_exec_lines_only_gathered_per_primitive_and_shape(self):
        rows = ob.parse(LINES)
        self.assertEqual(len(rows), 2)
        conv = [v for k, v in rows.items() if k[0] == "convolution"][0]
        self.assertEqual(conv, [40.0, 60.0])
        reorder = [v for k, v in rows.items() if k[0] == "reorder"][0]
        self.assertEqual(reorder, [3.5])

    def test_steady_state_is_the_longer_runs_excess_calls_at_their_median(self):
        stall = LINES[2].rsplit(",", 1)[0] + ",900"  # one call 20x the others
        short = ob.parse(LINES[:3])
        long_rows = ob.parse(LINES + [LINES[2], stall, LINES[2]])
        rows = ob.per_iteration(long_rows, short, per=2)
        conv = [v for k, v in rows.items() if k[0] == "convolution"][0]
        self.assertEqual(conv, (2 * 40.0, 2.0))  # 4 more calls over 2 iterations, median 40
        reorder = [v for k, v in rows.items() if k[0] == "reorder"][0]
        self.assertEqual(reorder, (3.5 / 2, 0.5))


if __name__ == "__main__":
    unittest.main()
