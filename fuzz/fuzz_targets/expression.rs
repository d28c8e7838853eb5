#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| batchgate::testing::fuzzing::expression(data));
