//! Real devices for the engine.
