// The signed-in user's Herald, for every screen: `{live, me, deviceID, signOut}`.
import { createContext, useContext } from "react";

export const HeraldContext = createContext(null);

/** The signed-in user's Herald (inside the signed-in screens only). */
export function useHerald() {
  const herald = useContext(HeraldContext);
  if (!herald) throw new Error("useHerald is used outside a signed-in screen");
  return herald;
}
