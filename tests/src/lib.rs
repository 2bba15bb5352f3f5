//! Test support shared by the end-to-end tests.
