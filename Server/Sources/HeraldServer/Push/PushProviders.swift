import Foundation
import HeraldRecords
import Logging

/// The providers `herald serve` sends with, made from its settings, each announced at start as on or off.
enum PushProviders {
    /// The providers the settings allow. With `demo`, every platform without credentials gets the log-only
    /// provider, so a newcomer sees each push the server would send.
    ///
    /// - Throws: ``ConfigurationError`` when a key, service account or CA file cannot be used.
    static func make(
        _ settings: PushSettings, vapid: VAPID, demo: Bool, logger: Logger
    ) async throws -> (providers: [any PushProvider], http: PushHTTP?) {
        var providers: [any PushProvider] = []
        let expoConfigured = settings.expoURL != nil || settings.expoAccessToken != nil
        // Web Push needs no third party's credentials (the VAPID key is the server's own), so it is always on.
        let http = try PushHTTP(caFile: settings.caFile, allowPrivate: settings.webPushAllowPrivate)
        providers.append(WebPushProvider(
            vapid: vapid, http: http, maxAge: settings.maxAge, concurrency: settings.concurrency))
        logger.info("push: Web Push on (VAPID subject \(vapid.subject ?? "none: set HERALD_VAPID_SUBJECT"))")
        if settings.webPushAllowPrivate {
            logger.warning("push: HERALD_WEBPUSH_ALLOW_PRIVATE is set: Web Push endpoints on private networks are taken (tests only)")
        }
        do {
            if let apns = settings.apns {
                providers.append(try await APNsProvider(
                    settings: apns, http: http, maxAge: settings.maxAge, concurrency: settings.concurrency,
                    localizationKeys: settings.localizationKeys, encrypt: settings.content == .encrypted, logger: logger))
                logger.info("push: APNs on (topic \(apns.topic), \(apns.url))")
            } else {
                logger.info("push: APNs off (set HERALD_APNS_KEY_FILE, HERALD_APNS_KEY_ID, HERALD_APNS_TEAM_ID, HERALD_APNS_TOPIC)")
            }
            if let file = settings.fcmServiceAccount {
                providers.append(try await FCMProvider(
                    serviceAccountFile: file, url: settings.fcmURL, http: http, maxAge: settings.maxAge,
                    concurrency: settings.concurrency, localizationKeys: settings.localizationKeys,
                    encrypt: settings.content == .encrypted, logger: logger))
                logger.info("push: FCM on (\(settings.fcmURL))")
            } else {
                logger.info("push: FCM off (set HERALD_FCM_SERVICE_ACCOUNT)")
            }
            // Expo needs no credentials; in the demo it is left to the log unless configured.
            if !demo || expoConfigured {
                let url = settings.expoURL ?? ExpoProvider.defaultURL
                providers.append(ExpoProvider(
                    url: url, accessToken: settings.expoAccessToken, http: http, maxAge: settings.maxAge,
                    concurrency: settings.concurrency, encrypt: settings.content == .encrypted))
                logger.info("push: Expo on (\(url))")
            }
        } catch {
            await http.shutdown()
            throw error
        }
        if demo {
            let served = Set(providers.map(\.platform))
            for platform in [DeviceRegistration.Platform.apns, .fcm, .expo] where !served.contains(platform) {
                providers.append(LogPushProvider(platform: platform, logger: logger))
                logger.info("push: \(platform.rawValue) pushes are logged, not sent (--demo without credentials)")
            }
        }
        return (providers, http)
    }
}
