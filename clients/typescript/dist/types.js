/**
 * The client's public types, all derived from the server's OpenAPI document
 * (`src/generated/openapi.ts`, made by `npm run generate`): results exactly as on the wire
 * (camelCase, times as integer ms), inputs the same but for times, which may also be `Date`,
 * and embeddings, which may also be typed arrays.
 */
/** The time fields of each input, as the client converts them. */
export const TIME_FIELDS = {
    remember: ["eventTime", "validFrom", "validTo", "retainUntil"],
    recall: ["asOf", "knownAt"],
    scope: ["ingestedBefore", "eventBefore"],
    load: ["observedAt"],
};
