# isthmus/trace/records.py: the trace file format of native/src/trace/record.h, for Python:
# the record kinds and, per kind, the struct layout of its fixed part (after the 8-byte
# header). test_trace_format checks these sizes against the C structs.
from __future__ import annotations

import struct

MAGIC = 0x544D5349  # "ISMT"
VERSION = 1
FILE_HDR = struct.Struct("<IIIi")  # magic, version, kind, id
HDR = struct.Struct("<IBBH")       # len, kind, flags, fn
PROC_RANK, PROC_GATEWAY = 1, 2

INFO, NAMES, CALL, SEND, RECV, COLL, DONE, START, COMM, COMMFREE, FREE, MARK, SYNC, LOSS, END, \
    EVENT = range(1, 17)
RMA, WIN = 18, 19
GW_FRAME, GW_ACK, GW_SAMPLE, GW_LINK, GW_APP = range(20, 25)

# the fixed part of each kind after the header (little-endian, no padding)
BODY = {
    CALL: struct.Struct("<QQHHi"),          # t0, t1, thread, depth, rc
    SEND: struct.Struct("<IiiIQQ"),         # comm, peer, tag, pad, bytes, req
    RECV: struct.Struct("<IiiIQQ"),
    COLL: struct.Struct("<IiQQQ"),          # comm, root, sent, recvd, req
    DONE: struct.Struct("<QiiQ"),           # req, source, tag, bytes
    START: struct.Struct("<Q"),             # req
    FREE: struct.Struct("<Q"),
    COMM: struct.Struct("<IIIi"),           # comm, size, rsize, rank (+ members)
    COMMFREE: struct.Struct("<II"),
    MARK: struct.Struct("<Qii"),            # t, level, pad
    SYNC: struct.Struct("<iIQQQ"),          # peer, pad, t0, t1, tr
    LOSS: struct.Struct("<QQQ"),            # t, records, bytes
    END: struct.Struct("<QQQQQ"),           # t, records, bytes, lost records, lost bytes
    EVENT: struct.Struct("<QQQQ"),          # t, a, b, c
    RMA: struct.Struct("<IiHHiQQQ"),        # win, target, op, pad, assert, out, back, req
    WIN: struct.Struct("<II"),              # win, comm
    GW_FRAME: struct.Struct("<QQHHIiiiHHQQ"),  # t, seq, link, stream, len, src, dst, tag,
                                               # fflags, pad, a, b
    GW_ACK: struct.Struct("<QQHHI"),        # t, ack, link
    GW_SAMPLE: struct.Struct("<QHHIIIQQQqQQQII"),  # t, link, nstreams, sendq, unacked, ooo,
                                                   # tx, rx, held, early_out, srtt_us, cwnd,
                                                   # pacing, credits, pad
    GW_LINK: struct.Struct("<QHHiiI"),      # t, link, pad, peer site, peer gw, pad (+ why)
    GW_APP: struct.Struct("<QiiiIQHHI"),    # t, src, dst, tag, len, a, link, pad, pad
}

# flags
CALL_ERROR = 0x01
P2P_NB, P2P_INIT, P2P_STATUS, P2P_PROBED = 0x01, 0x02, 0x04, 0x08
COLL_NB, COLL_INIT, COLL_ROOT = 0x01, 0x02, 0x04
DONE_CANCELLED, DONE_STATUS = 0x01, 0x02
COMM_INTER, COMM_WORLD = 0x01, 0x02
RMA_REQ, RMA_EXCL, RMA_NOCHECK, RMA_DONE = 0x01, 0x02, 0x04, 0x08
WIN_FREED = 0x01
# RMA records' op (enum ism_tr_rma_op)
RMA_OPS = {1: "put", 2: "get", 3: "acc", 4: "gacc", 5: "fop", 6: "cas",
           16: "lock", 17: "unlock", 18: "lock_all", 19: "unlock_all", 20: "flush",
           21: "flush_all", 22: "flush_local", 23: "flush_local_all", 24: "fence", 25: "post",
           26: "start", 27: "complete", 28: "wait", 29: "test", 30: "sync"}
SYNC_RANK, SYNC_GATEWAY = 0, 1
GW_SENT, GW_RESENT, GW_RECEIVED, GW_DUPLICATE = 1, 2, 3, 4
GW_FROM_APP, GW_TO_APP = 1, 2

# frame types (native/src/contract/frame.h)
FRAME_TYPES = {1: "EAGER", 2: "RTS", 3: "CTS", 4: "DATA", 5: "CREDIT", 6: "ABORT", 7: "FIN",
               8: "HEARTBEAT", 9: "ABORT_ACK", 10: "HELLO", 11: "RESUME", 12: "ACK", 13: "PING",
               14: "PONG", 15: "QUERY", 16: "ANSWER", 17: "WATCH", 18: "LINKEV",
               19: "IO", 20: "IOREP", 21: "RMA"}
FRAME_HDR_BYTES = 48
MPI_ANY_SOURCE, MPI_PROC_NULL, MPI_ANY_TAG = -1, -3, -2
