//! The sample pools' reads through the fake driver: what a poll reads of a query the driver
//! reports not ready.

use crate::fake_driver::{self, FakeDevice};
use crate::samples::blocks::{BlockPool, Kind, BLOCK, STATS_COUNT};
use crate::samples::span_reads::{Span, SpanReads};

/// A poll that finds a block not ready must not see the previous poll's values as its
/// own, whatever the driver leaves in the not-ready queries' words.
#[test]
fn a_not_ready_query_never_reads_as_the_last_polls_values() {
    let fake = FakeDevice::new();
    let d = &fake.state.dev;
    for kind in [Kind::Timestamp, Kind::Stats] {
        let pool = BlockPool::new(d, kind, 2).expect("pool");
        let block = pool.take().expect("block");
        let width = if kind == Kind::Stats { STATS_COUNT + 1 } else { 2 };
        let mut reads = SpanReads::default();
        fn span(r: &mut SpanReads, kind: Kind) -> &mut Span {
            if kind == Kind::Stats {
                &mut r.stats
            } else {
                &mut r.ts
            }
        }
        let mut out = vec![0u64; BLOCK as usize * width];
        reads.begin();
        span(&mut reads, kind).include(&block);
        reads.read(d);
        assert!(span(&mut reads, kind).copy_block(&block, &mut out));
        assert!(
            out.chunks(width).all(|q| q[width - 1] == 1),
            "{kind:?}: available at first"
        );

        fake_driver::report_not_ready(block.pool.handle());
        reads.begin();
        span(&mut reads, kind).include(&block);
        reads.read(d);
        assert!(span(&mut reads, kind).copy_block(&block, &mut out));
        assert!(
            out.chunks(width).all(|q| q[width - 1] == 0),
            "{kind:?}: a not-ready query read as available"
        );
        pool.destroy();
    }
}
