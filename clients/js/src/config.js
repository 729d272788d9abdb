// The engine's unit of time and the banner queue's options (HeraldCore's BannerConfig).

/** One second, in the engine's unit. */
export const SECOND = 1_000_000;

/** The banner queue's options; the defaults are the product's (3 waiting, 4 s, 0.25 s gap, no coalescing, 50 px). */
export function bannerConfig({ capacity = 3, duration = 4 * SECOND, gap = SECOND / 4, coalesce = false, swipeThreshold = 50 } = {}) {
  return {
    capacity: Math.max(0, capacity),
    duration: Math.max(0, duration),
    gap: Math.max(0, gap),
    coalesce: Boolean(coalesce),
    swipeThreshold: Math.max(0, swipeThreshold),
  };
}
